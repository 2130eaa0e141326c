import type { StoreKeeperApi } from '../../messages/store.js';
import { CountLru } from '../../shared/lru.js';
import type { Logger } from '../../shared/logger.js';
import type { Peer } from '../../shared/rpc.js';
import type { StoreRequests } from './manifester.js';

// Asks the store for missing derived files once per file, however many heartbeats want it.
// A generation that failed (a corrupt binary, a full disk) is not retried for every
// heartbeat that asks: devices keep getting retry_after while it cools down.

export const FAILED_GENERATION_COOLDOWN_MS = 60_000;
/** Failed generations remembered at once; an older failure may be retried early. */
const FAILURES_REMEMBERED = 1024;

/** Runs one request against the store; the caller's link gives it its deadline. */
export type AskStore = (run: (store: Peer<StoreKeeperApi>) => Promise<unknown>) => Promise<unknown>;

export class GenerationRequests implements StoreRequests {
  private readonly pending = new Set<string>();
  private readonly failedAt = new CountLru<string, number>(FAILURES_REMEMBERED);

  constructor(private readonly askStore: AskStore, private readonly log: Pick<Logger, 'warn'>, private readonly now: () => number = Date.now) {}

  ensureDelta(from: string, to: string): void {
    this.ask(`${from}_${to}`, (s) => s.ensureDelta(from, to));
  }

  ensureFull(hash: string): void {
    this.ask(hash, (s) => s.ensureFull(hash));
  }

  /** After a store-keeper restart nothing asked before is still under way. */
  forgetPending(): void {
    this.pending.clear();
    this.failedAt.clear();
  }

  private ask(key: string, run: (store: Peer<StoreKeeperApi>) => Promise<unknown>): void {
    const failed = this.failedAt.get(key);
    if (this.pending.has(key) || (failed !== undefined && this.now() - failed < FAILED_GENERATION_COOLDOWN_MS)) return;
    this.pending.add(key);
    this.askStore(run)
      .then(() => this.failedAt.delete(key))
      .catch((err) => {
        this.failedAt.set(key, this.now());
        this.log.warn({ err, file: key }, 'store could not produce a derived file; retrying after a cooldown');
      })
      .finally(() => this.pending.delete(key));
  }
}
