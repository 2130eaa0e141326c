import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { MAX_OPERATOR_TOKENS, type OperatorTokenEntry, type OperatorTokenSnapshot, type OperatorTokenView } from '../../../messages/operators.js';
import { isRole } from '../../../shared/admin-roles.js';
import { PgListener } from '../../../shared/database/listener.js';
import type { Database } from '../../../shared/database/schema.js';
import { UpdaterError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import { writeLocked } from '../write-lock.js';

// Operator tokens as the fleet actor keeps them: rows of (id, name, role, SHA-256 of the token,
// created_at, expires_at) in the database, and the same rows in memory, which the HTTP
// front-end replicates and checks presented tokens against without a database round trip.
//
//   POST /admin/tokens ─▶ insert + NOTIFY ─┐             ┌─▶ every replica's fleet actor reloads
//   DELETE /admin/tokens/{id} ─▶ delete + NOTIFY ─┴─ PostgreSQL ─┘     its table (LISTEN)
//   http front-end ──operatorTokens(version) every 250 ms──▶ the table when it changed
//
// A revocation reaches another replica as fast as NOTIFY travels plus one pull of its front-end.
// While the listening connection is down, the table is re-read from the database whenever it
// is asked for and older than a second, so a missed notification costs at most that.

export const TOKENS_CHANNEL = 'updater_operator_tokens';
/** How old the table may be when the listener cannot vouch for it. */
const STALE_MS = 1_000;

export class OperatorTokenTable {
  private tokens = new Map<string, OperatorTokenEntry>();
  /** Differs on each start, so a front-end never mistakes a new table for the one it holds. */
  private readonly epoch = randomBytes(4).toString('hex');
  private generation = 0;
  private loadedAt = 0;
  private loaded = false;
  private reloading: Promise<void> | undefined;
  private again = false;
  private listener: PgListener | undefined;

  constructor(
    private readonly db: () => Kysely<Database>,
    /** config.cluster: the table is PostgreSQL, shared by every replica, and changes are announced by NOTIFY. */
    private readonly cluster: boolean,
    private readonly log: Logger,
  ) {}

  /** Reads the table and, on PostgreSQL, listens for changes made by any replica. */
  async start(location: string): Promise<void> {
    if (this.cluster) {
      this.listener = new PgListener(location, [TOKENS_CHANNEL], {
        notify: () => void this.reload().catch((err) => this.log.warn({ err }, 'operator tokens: reload failed')),
        up: () => void this.reload().catch((err) => this.log.warn({ err }, 'operator tokens: reload failed')),
        down: () => undefined,
      }, this.log);
      this.listener.start();
    }
    await this.reload().catch((err) => this.log.warn({ err }, 'operator tokens: not read yet; retrying when asked'));
  }

  async close(): Promise<void> {
    await this.listener?.close();
  }

  /** The table for the front-end, or null when `known` is its version already. */
  async snapshot(known: string | null): Promise<OperatorTokenSnapshot | null> {
    const vouched = !this.cluster || this.listener?.isUp === true;
    if (!this.loaded || (!vouched && Date.now() - this.loadedAt > STALE_MS)) await this.reload();
    const version = `${this.epoch}:${this.generation}`;
    return known === version ? null : { version, tokens: [...this.tokens.values()] };
  }

  async create(entry: OperatorTokenEntry): Promise<OperatorTokenView> {
    const row = { id: entry.id, name: entry.name, role: entry.role, hash: entry.hash, created_at: entry.created_at, expires_at: entry.expires_at };
    // Under the table's write lock (write-lock.ts): the count and the insert are one step for
    // every replica, so the cap holds however many operators create tokens at once.
    await writeLocked(this.db(), 'operator_tokens', async (trx) => {
      const { count } = await trx.selectFrom('operator_tokens').select((e) => e.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
      if (Number(count) >= MAX_OPERATOR_TOKENS) {
        throw new UpdaterError('TOO_MANY_TOKENS', `at most ${MAX_OPERATOR_TOKENS} operator tokens are stored; revoke some first`);
      }
      await trx.insertInto('operator_tokens').values(row).execute();
      await this.notify(trx, entry.id);
    });
    this.apply(() => this.tokens.set(entry.id, { ...entry }));
    return view(entry);
  }

  async list(): Promise<OperatorTokenView[]> {
    const rows = await this.db().selectFrom('operator_tokens').selectAll().orderBy('created_at').orderBy('id').execute();
    return known(rows).map(view);
  }

  async revoke(id: string): Promise<OperatorTokenView | null> {
    const row = await this.db().transaction().execute(async (trx) => {
      const found = await trx.deleteFrom('operator_tokens').where('id', '=', id).returningAll().executeTakeFirst();
      if (found) await this.notify(trx, id);
      return found;
    });
    if (!row) return null;
    this.apply(() => this.tokens.delete(id));
    return view(decode(row));
  }

  /** Re-reads the whole table (a few rows); calls that arrive meanwhile wait for one more read. */
  private async reload(): Promise<void> {
    if (this.reloading) {
      this.again = true;
      return this.reloading;
    }
    this.reloading = (async () => {
      do {
        this.again = false;
        const started = Date.now();
        const rows = await this.db().selectFrom('operator_tokens').selectAll().execute();
        const next = new Map<string, OperatorTokenEntry>();
        for (const entry of known(rows)) next.set(entry.id, entry);
        this.loadedAt = started;
        this.loaded = true;
        if (!sameTable(this.tokens, next)) this.apply(() => (this.tokens = next));
      } while (this.again);
    })().finally(() => (this.reloading = undefined));
    return this.reloading;
  }

  private apply(change: () => void): void {
    change();
    this.generation += 1;
  }

  /** PostgreSQL delivers the notification at commit, to every replica listening (this one too). */
  private async notify(trx: Kysely<Database>, id: string): Promise<void> {
    if (this.cluster) await sql`select pg_notify(${TOKENS_CHANNEL}, ${id})`.execute(trx);
  }
}

type Row = { id: string; name: string; role: string; hash: string; created_at: number; expires_at: number | null };

/** Rows with a role this code does not know (edited by hand) grant nothing: they are left out. */
function known(rows: Row[]): OperatorTokenEntry[] {
  return rows.filter((r) => isRole(r.role)).map(decode);
}

function decode(r: Row): OperatorTokenEntry {
  if (!isRole(r.role)) throw new UpdaterError('INTERNAL', `operator token ${r.id} has an unknown role in the database`);
  return { id: r.id, name: r.name, role: r.role, hash: r.hash, created_at: Number(r.created_at), expires_at: r.expires_at === null ? null : Number(r.expires_at) };
}

function view(e: OperatorTokenEntry): OperatorTokenView {
  return { id: e.id, name: e.name, role: e.role, created_at: e.created_at, expires_at: e.expires_at };
}

function sameTable(a: Map<string, OperatorTokenEntry>, b: Map<string, OperatorTokenEntry>): boolean {
  if (a.size !== b.size) return false;
  for (const [id, e] of a) {
    const o = b.get(id);
    if (!o || o.hash !== e.hash || o.role !== e.role || o.name !== e.name || o.expires_at !== e.expires_at) return false;
  }
  return true;
}
