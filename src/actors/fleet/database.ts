import type { Kysely } from 'kysely';
import { openDatabase, redactDatabaseUrl } from '../../shared/database/connect.js';
import type { Database } from '../../shared/database/schema.js';
import { UpdaterError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';

// The fleet actor's one connection to the fleet database. The embedded file lives in the
// store: when the store is full or read-only the server must still start and serve devices, so
// the connection may be missing for a while; `db()` then refuses with DATABASE_UNREACHABLE and
// `current()` is undefined, and `reopen()` tries again.

export class FleetDatabase {
  private store: Awaited<ReturnType<typeof openDatabase>> | undefined;
  /** Why the database could not be opened, while it is not: what a change refused for want of its audit row says. */
  private error: unknown = new Error('the fleet database is not open yet');
  /** One attempt at a time, from the retry timer or a change that needs its audit row now. */
  private opening: Promise<void> | undefined;

  constructor(private readonly location: string, private readonly log: Logger) {}

  async open(): Promise<void> {
    try {
      this.store = await openDatabase(this.location);
    } catch (err) {
      this.error = err;
      throw err;
    }
    this.log.info({ engine: this.store.engine, database: redactDatabaseUrl(this.location) }, 'fleet database open');
  }

  reopen(): Promise<void> {
    return (this.opening ??= this.open().finally(() => (this.opening = undefined)));
  }

  get isOpen(): boolean {
    return this.store !== undefined;
  }

  get openError(): unknown {
    return this.error;
  }

  /** The open database, or undefined while there is none. */
  current(): Kysely<Database> | undefined {
    return this.store?.db;
  }

  /** The open database; while there is none, admin queries answer DATABASE_UNREACHABLE. */
  db(): Kysely<Database> {
    if (!this.store) throw new UpdaterError('DATABASE_UNREACHABLE', 'the fleet database is not open (the store is full or read-only); retrying', { key: 'database' });
    return this.store.db;
  }

  async close(): Promise<void> {
    await this.store?.close();
  }
}
