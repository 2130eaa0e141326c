import { rm, statfs } from 'node:fs/promises';
import type { StoreCondition } from '../../messages/store.js';
import { openTemp, writeFully } from '../../shared/durable-file.js';
import { UpdaterError, isUpdaterError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';

// Whether the store can take writes. A full disk or a read-only mount must not take device
// service down: the server starts and serves what it holds, refuses writes at once with a
// stable code (507 STORE_FULL, 503 STORE_READ_ONLY) instead of running a diff that cannot be
// kept, and recovers by itself when space frees.
//
// The store is probed at start and then every PROBE_INTERVAL_MS for as long as the server
// runs, healthy or not: a store remounted read-only or filled by another process under a
// running server is seen by /health and updater_store_condition within one interval, not
// only when the next publish fails (a fault campaign saw /health say "writable" for a
// minute on a read-only store, until the first 507).

export const PROBE_INTERVAL_MS = 2_000;
/** Enough that a probe that fits says more than "an empty file fits". */
const PROBE_BYTES = 64 * 1024;

export interface StoreReading {
  readonly condition: StoreCondition;
  /** Bytes an unprivileged writer may still use, at the last probe; -1 before the first. */
  readonly freeBytes: number;
}

export class Writability {
  private state: StoreCondition = 'writable';
  private freeBytes = -1;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<StoreCondition> | undefined;
  /** Counts write failures, so a probe under way when one came does not undo what it said. */
  private failures = 0;

  constructor(private readonly dir: string, private readonly log: Logger) {}

  get condition(): StoreCondition {
    return this.state;
  }

  get reading(): StoreReading {
    return { condition: this.state, freeBytes: this.freeBytes };
  }

  /** Probes on a timer from now on (the first probe is the caller's, at open). */
  start(): void {
    this.timer ??= setInterval(() => {
      this.probe().catch((err) => this.log.warn({ err }, 'store write probe failed'));
    }, PROBE_INTERVAL_MS).unref();
  }

  /**
   * The next probe a whole interval from now. After a write that did not fit, the small probe
   * may still fit at once: the store says "full" for at least an interval rather than
   * flipping back before the caller that saw 507 can look at /health.
   */
  private restartTimer(): void {
    if (!this.timer) return;
    this.close();
    this.start();
  }

  /** Writes, syncs and removes a small temporary in the store directory; one probe at a time. */
  probe(): Promise<StoreCondition> {
    this.running ??= this.probeOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  private async probeOnce(): Promise<StoreCondition> {
    const failuresBefore = this.failures;
    let temp: string | undefined;
    try {
      const { path, handle } = await openTemp(this.dir);
      temp = path;
      try {
        await writeFully(handle, Buffer.alloc(PROBE_BYTES));
        await handle.sync();
      } finally {
        await handle.close();
      }
      if (this.failures === failuresBefore) this.set('writable');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOSPC' || code === 'EDQUOT') this.set('full');
      else if (code === 'EROFS' || code === 'EPERM' || code === 'EACCES') this.set('read-only');
      else throw err;
    } finally {
      if (temp) await rm(temp, { force: true }).catch(() => undefined);
      await this.measureFree();
    }
    return this.state;
  }

  private async measureFree(): Promise<void> {
    try {
      const s = await statfs(this.dir);
      this.freeBytes = s.bavail * s.bsize;
    } catch {
      // The directory is gone or unreadable: the write probe has said what matters.
    }
  }

  /** Throws the condition's error when the store cannot take writes. */
  refuse(what: string): void {
    if (this.state === 'full') throw new UpdaterError('STORE_FULL', `the store has no space left; cannot write ${what}`);
    if (this.state === 'read-only') throw new UpdaterError('STORE_READ_ONLY', `the store is read-only; cannot write ${what}`);
  }

  /** Records what a write's failure says about the store. */
  failed(err: unknown): void {
    if (!isUpdaterError(err)) return;
    if (err.code !== 'STORE_FULL' && err.code !== 'STORE_READ_ONLY') return;
    this.failures++;
    this.set(err.code === 'STORE_FULL' ? 'full' : 'read-only');
    this.restartTimer();
  }

  /** What `succeeded` compares against: take it when a write starts. */
  writeStarted(): number {
    return this.failures;
  }

  /**
   * A write that fitted says the store takes writes, unless another write failed for want of
   * space while it ran: a small write begun before a large one failed must not undo the
   * "full" that large one found (as the small probe must not; see restartTimer).
   */
  succeeded(failuresAtStart: number): void {
    if (this.failures !== failuresAtStart) return;
    this.set('writable');
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private set(next: StoreCondition): void {
    if (next === this.state) return;
    const before = this.state;
    this.state = next;
    if (next === 'writable') this.log.warn({ before }, 'store is writable again');
    else this.log.error({ condition: next, dir: this.dir }, `store is ${next}: serving what it holds, refusing writes until it recovers`);
  }
}
