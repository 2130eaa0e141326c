import type { Kysely } from 'kysely';
import type { AuditPage, AuditQuery, AuditRecord } from '../../../messages/operators.js';
import type { Database } from '../../../shared/database/schema.js';
import { UpdaterError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';

// The audit log (docs/operations.md): rows handed over by the HTTP front-end, written in the
// order they came, in batches. A change is recorded before it is made: `begin` writes its row
// (status 0) and resolves with the row's id only once it is committed, and the front-end makes
// the change only then; `end` fills in the answer. So a change never escapes the log, even when
// the server is killed right after it (the row then keeps status 0). Refusals (401, 403, 429)
// change nothing and are written after the answer, never waited for. A listing waits for what is
// queued, so an operator reading the log sees their own last request.
//
//   http admin routes ──begin(row)──▶ queue ──▶ audit_log (one insert, its id back) ──▶ the change
//                     ──end(id, status)──▶ queue ──▶ update       ──audit(rows)──▶ queue ──▶ insert
//   GET /admin/audit ──▶ settled() ──▶ newest first      retention timer ──▶ prune(before)

/** Rows waiting to be written while the database is away; past it the oldest are dropped (counted, logged). */
export const MAX_QUEUED = 10_000;
const BATCH = 500;
const RETRY_MS = 1_000;

/** What waits to be written: plain rows, a change's first row (its writer waits for the id), its answer. */
type Queued =
  | { readonly kind: 'row'; readonly record: AuditRecord }
  | { readonly kind: 'begin'; readonly record: AuditRecord; resolve(id: number): void; reject(err: unknown): void }
  | { readonly kind: 'end'; readonly id: number; readonly status: number; readonly detail: string };

export class AuditLog {
  private queue: Queued[] = [];
  private writing: Promise<void> | undefined;
  private retry: NodeJS.Timeout | undefined;
  /** Rows dropped because the queue was full (the database was away that long). */
  dropped = 0;

  constructor(
    private readonly db: () => Kysely<Database>,
    private readonly log: Logger,
  ) {}

  append(records: readonly AuditRecord[]): void {
    for (const record of records) this.queue.push({ kind: 'row', record });
    this.bound();
    this.kick();
  }

  /** Writes a change's row before the change is made; resolves with its id once committed, rejects when it cannot be. */
  begin(record: AuditRecord): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue.push({ kind: 'begin', record, resolve, reject });
      this.kick();
    });
  }

  /** The answer to a begun change. */
  end(id: number, status: number, detail: string): void {
    this.queue.push({ kind: 'end', id, status, detail });
    this.bound();
    this.kick();
  }

  private bound(): void {
    const over = this.queue.length - MAX_QUEUED;
    if (over <= 0) return;
    const dropped = this.queue.splice(0, over);
    // A waiting change is refused rather than dropped silently.
    for (const q of dropped) if (q.kind === 'begin') q.reject(new Error('the audit queue is full'));
    this.dropped += over;
    this.log.error({ dropped: over }, 'audit rows dropped: the database has been unreachable for too long');
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
      const first = this.queue[0]!;
      try {
        if (first.kind === 'row') {
          const end = this.queue.findIndex((q, i) => i >= BATCH || q.kind !== 'row');
          const batch = this.queue.slice(0, end === -1 ? this.queue.length : end) as Extract<Queued, { kind: 'row' }>[];
          await this.db().insertInto('audit_log').values(batch.map((q) => ({ ...q.record }))).execute();
          this.queue.splice(0, batch.length);
        } else if (first.kind === 'begin') {
          // Taken off the queue before the write: a change whose row fails is refused now, never written later.
          this.queue.shift();
          try {
            const row = await this.db().insertInto('audit_log').values({ ...first.record }).returning('id').executeTakeFirstOrThrow();
            first.resolve(Number(row.id));
          } catch (err) {
            first.reject(auditWriteError(err));
          }
        } else {
          await this.db().updateTable('audit_log').set({ status: first.status, detail: first.detail }).where('id', '=', first.id).execute();
          this.queue.shift();
        }
      } catch (err) {
        this.log.error({ err, queued: this.queue.length }, 'audit rows not written yet; retrying in a second');
        clearTimeout(this.retry);
        this.retry = setTimeout(() => this.kick(), RETRY_MS);
        return;
      }
    }
  }
}

/**
 * Why a change's row could not be written, as the operator should read it: in the default layout
 * the database lives in the store, so a disk turned read-only (or full) refuses the change for
 * the same reason the store would; anything else is an unreachable database.
 */
export function auditWriteError(err: unknown): UpdaterError {
  // openDatabase keeps the driver's code as `cause` when it could not open the database at all.
  const e = err as { code?: unknown; details?: { cause?: unknown } };
  const code = String(e.details?.cause ?? e.code ?? '');
  const why = `the audit row of this change could not be written (${(err as Error).message}), so the change was not made`;
  if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_IOERR') || code === 'SQLITE_CANTOPEN') return new UpdaterError('STORE_READ_ONLY', `the fleet database is read-only: ${why}`);
  if (code === 'SQLITE_FULL') return new UpdaterError('STORE_FULL', `the fleet database's disk is full: ${why}`);
  return new UpdaterError('DATABASE_UNREACHABLE', why);
}
