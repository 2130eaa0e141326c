import type { AuditRecord } from '../../../messages/operators.js';
import { UpdaterError } from '../../../shared/errors.js';
import type { Principal } from './principal.js';

// What the admin routes put in the audit log (docs/operations.md, "The audit log"): every
// request that is not a read, and every refused one (401, 403, 429). A change (an authorized
// POST, PUT or DELETE) is recorded before it is made: its row is committed first (`begin`), the
// answer fills it in afterwards (`end`), so a server killed right after a change still shows it.
// A refusal changes nothing and is recorded after it was answered.
// Never a secret: the Authorization header is never read into a row, the detail is a short
// text the handler or the error chose, and request bodies are not copied.
//
// A flood of bad tokens is answered 429 as fast as the attacker can send; one row each would
// let them grow the database at will. So the first 429 is written as it comes, and those that
// follow within the next second are written as one row that counts them.

const MAX_DETAIL = 500;
const MAX_PATH = 1024;
const THROTTLED_ROW_MS = 1_000;

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);

/** The fleet actor's side of the audit log. */
export interface AuditSink {
  /** Fire-and-forget rows (refusals, and every row without `begin`). */
  send(records: AuditRecord[]): void;
  /** Commits a change's row before the change; its id. */
  begin(record: AuditRecord): Promise<number>;
  end(id: number, status: number, detail: string): void;
}

/** Whether a request with this method and answer is recorded. */
export function audited(method: string, status: number): boolean {
  return (method !== 'GET' && method !== 'HEAD') || status === 401 || status === 403 || status === 429;
}

export class AdminAudit {
  private pending: AuditRecord[] = [];
  private scheduled = false;
  private throttled: { first: AuditRecord; count: number } | undefined;
  private throttledTimer: NodeJS.Timeout | undefined;

  /** `fleet` hands rows to the fleet actor; undefined when there is no fleet actor (and so no audit log). */
  constructor(private readonly fleet: AuditSink | undefined, private readonly now: () => number = Date.now) {}

  /**
   * A change about to be made: resolves with its row's id once the row is committed (undefined
   * without an audit log); rejects when it cannot be written, and the change must not be made.
   */
  async begin(who: Principal, method: string, path: string): Promise<number | undefined> {
    if (!this.fleet) return undefined;
    try {
      return await this.fleet.begin(this.row(who, method, path, 0, 'started; no answer recorded (the server stopped before it answered)'));
    } catch (err) {
      // The fleet actor says why (auditWriteError in fleet/operators/audit.ts); a lost message or a closed database is unreachable.
      if (err instanceof UpdaterError && ['STORE_READ_ONLY', 'STORE_FULL', 'DATABASE_UNREACHABLE'].includes(err.code)) throw err;
      throw new UpdaterError('DATABASE_UNREACHABLE', `the audit row of this change could not be written, so the change was not made: ${(err as Error).message}`);
    }
  }

  /** The answer to a change `begin` recorded. */
  end(id: number, status: number, detail: string): void {
    this.fleet?.end(id, status, clip(detail, MAX_DETAIL));
  }

  record(who: Principal | null, method: string, path: string, status: number, detail: string): void {
    if (!this.fleet || !audited(method, status)) return;
    const row = this.row(who, method, path, status, detail);
    if (status === 429 && this.throttle(row)) return;
    this.pending.push(row);
    // The rows of one event-loop turn travel in one message.
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private row(who: Principal | null, method: string, path: string, status: number, detail: string): AuditRecord {
    return {
      at: Math.floor(this.now() / 1000),
      token_id: who?.id ?? null,
      token_name: who?.name ?? null,
      role: who?.role ?? null,
      method,
      path: clip(path, MAX_PATH),
      status,
      detail: clip(detail, MAX_DETAIL),
    };
  }

  /** Hands over what is pending; `all` also closes an open count of 429s (drain). */
  flush(all = false): void {
    this.scheduled = false;
    if (all) this.closeThrottled();
    if (this.pending.length === 0) return;
    const rows = this.pending;
    this.pending = [];
    this.fleet?.send(rows);
  }

  /** True when the 429 is counted into a later row; false when it opens a window and is written itself. */
  private throttle(row: AuditRecord): boolean {
    if (this.throttled) {
      if (this.throttled.count === 0) this.throttled.first = row;
      this.throttled.count += 1;
      return true;
    }
    this.throttled = { first: row, count: 0 };
    this.throttledTimer = setTimeout(() => {
      this.throttledTimer = undefined;
      this.closeThrottled();
      this.flush();
    }, THROTTLED_ROW_MS);
    this.throttledTimer.unref();
    return false;
  }

  private closeThrottled(): void {
    const t = this.throttled;
    if (!t) return;
    this.throttled = undefined;
    clearTimeout(this.throttledTimer);
    this.throttledTimer = undefined;
    if (t.count > 0) this.pending.push({ ...t.first, detail: `${t.count} requests refused with 429 within a second, the first: ${t.first.detail}` });
  }
}
