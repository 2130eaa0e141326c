import type { AuditRecord } from '../../messages/operators.js';
import type { Principal } from './admin-auth.js';

// What the admin routes put in the audit log (docs/operations.md, "The audit log"): every
// request that is not a read, and every refused one (401, 403, 429), after it was answered.
// Never a secret: the Authorization header is never read into a row, the detail is a short
// text the handler or the error chose, and request bodies are not copied.
//
// A flood of bad tokens is answered 429 as fast as the attacker can send; one row each would
// let them grow the database at will. So 429s are written as one row a second per replica,
// whose detail counts the requests it stands for.

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
    if (status === 429) return this.throttle(row);
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

  private throttle(row: AuditRecord): void {
    if (this.throttled) {
      this.throttled.count += 1;
      return;
    }
    this.throttled = { first: row, count: 1 };
    this.throttledTimer = setTimeout(() => {
      this.throttledTimer = undefined;
      this.closeThrottled();
      this.flush();
    }, THROTTLED_ROW_MS);
    this.throttledTimer.unref();
  }

  private closeThrottled(): void {
    const t = this.throttled;
    if (!t) return;
    this.throttled = undefined;
    clearTimeout(this.throttledTimer);
    this.throttledTimer = undefined;
    const more = t.count - 1;
    this.pending.push({ ...t.first, detail: more > 0 ? `${t.first.detail}; ${more} more refused with 429 within a second` : t.first.detail });
  }
}
