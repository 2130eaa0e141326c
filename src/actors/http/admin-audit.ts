import type { AuditRecord } from '../../messages/operators.js';
import type { Principal } from './admin-auth.js';

// What the admin routes put in the audit log (docs/operations.md, "The audit log"): every
// request that is not a read, and every refused one (401, 403, 429), after it was answered.
// Never a secret: the Authorization header is never read into a row, the detail is a short
// text the handler or the error chose, and request bodies are not copied.
//
// A flood of bad tokens is answered 429 as fast as the attacker can send; one row each would
// let them grow the database at will. So the first 429 is written as it comes, and those that
// follow within the next second are written as one row that counts them.

const MAX_DETAIL = 500;
const MAX_PATH = 1024;
const THROTTLED_ROW_MS = 1_000;

/** Whether a request with this method and answer is recorded. */
export function audited(method: string, status: number): boolean {
  return (method !== 'GET' && method !== 'HEAD') || status === 401 || status === 403 || status === 429;
}

export class AdminAudit {
  private pending: AuditRecord[] = [];
  private scheduled = false;
  private throttled: { first: AuditRecord; count: number } | undefined;
  private throttledTimer: NodeJS.Timeout | undefined;

  /** `send` hands rows to the fleet actor (fire-and-forget); undefined when there is no fleet actor. */
  constructor(private readonly send: ((records: AuditRecord[]) => void) | undefined, private readonly now: () => number = Date.now) {}

  record(who: Principal | null, method: string, path: string, status: number, detail: string): void {
    if (!this.send || !audited(method, status)) return;
    const row: AuditRecord = {
      at: Math.floor(this.now() / 1000),
      token_id: who?.id ?? null,
      token_name: who?.name ?? null,
      role: who?.role ?? null,
      method,
      path: path.length > MAX_PATH ? `${path.slice(0, MAX_PATH)}…` : path,
      status,
      detail: detail.length > MAX_DETAIL ? `${detail.slice(0, MAX_DETAIL)}…` : detail,
    };
    if (status === 429 && this.throttle(row)) return;
    this.pending.push(row);
    // The rows of one event-loop turn travel in one message.
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Hands over what is pending; `all` also closes an open count of 429s (drain). */
  flush(all = false): void {
    this.scheduled = false;
    if (all) this.closeThrottled();
    if (this.pending.length === 0) return;
    const rows = this.pending;
    this.pending = [];
    this.send?.(rows);
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
