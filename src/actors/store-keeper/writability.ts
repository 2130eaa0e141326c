import { rm } from 'node:fs/promises';
import type { StoreCondition } from '../../messages/store.js';
import { openTemp, writeFully } from '../../shared/durable-file.js';
import { UpdaterError, isUpdaterError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';

// Whether the store can take writes. A full disk or a read-only mount must not take device
// service down: the server starts and serves what it holds, refuses writes at once with a
// stable code (507 STORE_FULL, 503 STORE_READ_ONLY) instead of running a diff that cannot be
// kept, and probes every few seconds so it recovers by itself when space frees.

const PROBE_INTERVAL_MS = 2_000;
/** Enough that a probe that fits says more than "an empty file fits". */
const PROBE_BYTES = 64 * 1024;

export class Writability {
  private state: StoreCondition = 'writable';
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly dir: string, private readonly log: Logger) {}

  get condition(): StoreCondition {
    return this.state;
  }

  /** Writes, syncs and removes a small temporary in the store directory. */
  async probe(): Promise<StoreCondition> {
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
      this.set('writable');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOSPC' || code === 'EDQUOT') this.set('full');
      else if (code === 'EROFS' || code === 'EPERM' || code === 'EACCES') this.set('read-only');
      else throw err;
    } finally {
      if (temp) await rm(temp, { force: true }).catch(() => undefined);
    }
    return this.state;
  }

  /** Throws the condition's error when the store cannot take writes. */
  refuse(what: string): void {
    if (this.state === 'full') throw new UpdaterError('STORE_FULL', `the store has no space left; cannot write ${what}`);
    if (this.state === 'read-only') throw new UpdaterError('STORE_READ_ONLY', `the store is read-only; cannot write ${what}`);
  }

  /** Records what a write's failure says about the store. */
  failed(err: unknown): void {
    if (!isUpdaterError(err)) return;
    if (err.code === 'STORE_FULL') this.set('full');
    else if (err.code === 'STORE_READ_ONLY') this.set('read-only');
  }

  succeeded(): void {
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
    if (next === 'writable') {
      this.log.warn({ before }, 'store is writable again');
      this.close();
      return;
    }
    this.log.error({ condition: next, dir: this.dir }, `store is ${next}: serving what it holds, refusing writes until it recovers`);
    this.timer ??= setInterval(() => {
      this.probe().catch((err) => this.log.warn({ err }, 'store write probe failed'));
    }, PROBE_INTERVAL_MS).unref();
  }
}
