import type { StoreKeeperApi } from '../../messages/store.js';
import type { DeltaFormat } from '../../shared/delta-formats.js';
import { CountLru } from '../../shared/lru.js';
import type { Logger } from '../../shared/logger.js';
import type { Peer } from '../../shared/rpc.js';
import type { StoreRequests } from './manifester.js';
import { storeCannotWrite } from './store-access.js';

// Asks the store for missing derived files once per file, however many heartbeats want it.
// A generation that failed (a corrupt binary, a full disk) is not retried for every
// heartbeat that asks: devices keep getting retry_after while it cools down.

export const FAILED_GENERATION_COOLDOWN_MS = 60_000;
/** A full or read-only store refuses at once and recovers by itself: ask again soon. */
export const STORE_REFUSED_COOLDOWN_MS = 3_000;
/** Failed generations remembered at once; an older failure may be retried early. */
const FAILURES_REMEMBERED = 1024;

/** Runs one request against the store; the caller's link gives it its deadline. */
export type AskStore = (run: (store: Peer<StoreKeeperApi>) => Promise<unknown>) => Promise<unknown>;

export class GenerationRequests implements StoreRequests {
  private readonly pending = new Set<string>();
  /** Per file, the time before which it is not asked for again. */
  private readonly coolingUntil = new CountLru<string, number>(FAILURES_REMEMBERED);

  constructor(private readonly askStore: AskStore, private readonly log: Pick<Logger, 'warn'>, private readonly now: () => number = Date.now) {}

  ensureDelta(from: string, to: string, format: DeltaFormat = 'bsdiff40'): void {
    // Each format of a pair is generated (and cools down after a failure) on its own.
    if (format === 'bsdiff40') this.ask(`${from}_${to}`, (s) => s.ensureDelta(from, to));
    else this.ask(`${from}_${to}_${format}`, (s) => s.ensureDelta(from, to, format));
  }

  ensureFull(hash: string): void {
    this.ask(hash, (s) => s.ensureFull(hash));
  }

  /** Cluster mode: the store indexes a binary another replica stored in the shared directory. */
  adoptInBackground(hash: string): void {
    this.ask(`${hash}.bin`, (s) => s.adoptBinary(hash));
  }

  /** After a store-keeper restart nothing asked before is still under way. */
  forgetPending(): void {
    this.pending.clear();
    this.coolingUntil.clear();
  }

  private ask(key: string, run: (store: Peer<StoreKeeperApi>) => Promise<unknown>): void {
    const until = this.coolingUntil.get(key);
    if (this.pending.has(key) || (until !== undefined && this.now() < until)) return;
    this.pending.add(key);
    this.askStore(run)
      .then(() => this.coolingUntil.delete(key))
      .catch((err) => {
        this.coolingUntil.set(key, this.now() + (storeCannotWrite(err) ? STORE_REFUSED_COOLDOWN_MS : FAILED_GENERATION_COOLDOWN_MS));
        this.log.warn({ err, file: key }, 'store could not produce a derived file; retrying after a cooldown');
      })
      .finally(() => this.pending.delete(key));
  }
}
