import type { Kysely } from 'kysely';
import type { AuditPage, AuditQuery, AuditRecord } from '../../messages/operators.js';
import type { Database } from '../../shared/database/schema.js';
import type { Logger } from '../../shared/logger.js';

// The audit log (docs/operations.md): rows handed over by the HTTP front-end after it answered,
// written in the order they came, in batches. The front-end never waits for them; a listing
// waits for what is queued, so an operator reading the log sees their own last request.
//
//   http admin routes ──audit(records)──▶ queue (at most MAX_QUEUED) ──▶ audit_log
//   GET /admin/audit ──▶ settled() ──▶ newest first      retention timer ──▶ prune(before)

/** Rows waiting to be written while the database is away; past it the oldest are dropped (counted, logged). */
export const MAX_QUEUED = 10_000;
const BATCH = 500;
const RETRY_MS = 1_000;

export class AuditLog {
  private queue: AuditRecord[] = [];
  private writing: Promise<void> | undefined;
  private retry: NodeJS.Timeout | undefined;
  /** Rows dropped because the queue was full (the database was away that long). */
  dropped = 0;

  constructor(
    private readonly db: () => Kysely<Database>,
    private readonly log: Logger,
  ) {}

  append(records: readonly AuditRecord[]): void {
    this.queue.push(...records);
    const over = this.queue.length - MAX_QUEUED;
    if (over > 0) {
      this.queue.splice(0, over);
      this.dropped += over;
      this.log.error({ dropped: over }, 'audit rows dropped: the database has been unreachable for too long');
    }
    this.kick();
  }

  /** Resolves once what is queued now has been written, or its write has failed. */
  async settled(): Promise<void> {
    while (this.writing) await this.writing;
  }

  async list(query: AuditQuery): Promise<AuditPage> {
    await this.settled();
    let select = this.db().selectFrom('audit_log').selectAll().orderBy('id', 'desc').limit(query.limit + 1);
    if (query.after !== undefined) select = select.where('id', '<', query.after);
    const rows = await select.execute();
    const more = rows.length > query.limit;
    const page = rows.slice(0, query.limit).map((r) => ({ ...r, id: Number(r.id), at: Number(r.at), status: Number(r.status) })) as AuditPage['entries'];
    return { entries: page, next: more ? page[page.length - 1]!.id : null };
  }

  /** Deletes rows older than `before` (Unix seconds); the number deleted. */
  async prune(before: number): Promise<number> {
    const result = await this.db().deleteFrom('audit_log').where('at', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  close(): void {
    clearTimeout(this.retry);
  }

  private kick(): void {
    if (this.writing || this.queue.length === 0) return;
    this.writing = this.writeAll().finally(() => (this.writing = undefined));
  }

  private async writeAll(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.slice(0, BATCH);
      try {
        await this.db().insertInto('audit_log').values(batch.map((r) => ({ ...r }))).execute();
      } catch (err) {
        this.log.error({ err, queued: this.queue.length }, 'audit rows not written yet; retrying in a second');
        clearTimeout(this.retry);
        this.retry = setTimeout(() => this.kick(), RETRY_MS);
        return;
      }
      this.queue.splice(0, batch.length);
    }
  }
}
