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
  /** Rows not awaited (refusals, and every row without `begin`); rejects when they could not be handed over. */
  send(records: AuditRecord[]): Promise<void>;
  /** Commits a change's row before the change; its id. */
  begin(record: AuditRecord): Promise<number>;
  /** Fills in a change's answer, not awaited; rejects as `send` does. */
  end(id: number, status: number, detail: string): Promise<void>;
}

/**
 * Told of rows that could not be handed to the fleet actor (restarting, waiting for its
 * database, or too slow): `first` for the first loss after rows went through.
 */
export interface AuditLosses {
  lost(rows: number, err: unknown, first: boolean): void;
  /** Rows went through again after losses. */
  recovered(): void;
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

  /** Whether the last rows handed over were lost. */
  private losing = false;

  /** `fleet` hands rows to the fleet actor; undefined when there is no fleet actor (and so no audit log). */
  constructor(
    private readonly fleet: AuditSink | undefined,
    private readonly losses: AuditLosses = { lost: () => undefined, recovered: () => undefined },
    private readonly now: () => number = Date.now,
  ) {}

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
    if (this.fleet) this.handOver(this.fleet.end(id, status, clip(detail, MAX_DETAIL)), 1);
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
    if (this.fleet) this.handOver(this.fleet.send(rows), rows.length);
  }

  /**
   * Settles a hand-over nobody awaits. A rejection left alone would end the HTTP front-end (an
   * unhandled rejection is an uncaught exception): a refused request while the fleet actor is
   * away must cost its audit row, not every connection of the thread. A change whose answer is
   * lost keeps its row at status 0, which the audit log already reads as "never recorded".
   */
  private handOver(handed: Promise<void>, rows: number): void {
    handed.then(() => {
      if (!this.losing) return;
      this.losing = false;
      this.losses.recovered();
    }, (err: unknown) => {
      this.losses.lost(rows, err, !this.losing);
      this.losing = true;
    });
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
