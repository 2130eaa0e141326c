import { randomBytes } from 'node:crypto';
import { UpdaterError } from './errors.js';

// Hands the front-ends a versioned snapshot by long poll: the manifester its decision snapshot
// (src/messages/decision-snapshot.ts), the fleet actor its targeting index. A front-end asks
// with the version it holds and is answered at once when there is a newer one, else as soon
// as one is made (or with null after POLL_HOLD_MS, and it asks again). Its next ask carries
// the version it now holds, which is how the owner knows what each front-end answers from: an
// operator's change returns only once every front-end holds it (`settled`), so the next
// heartbeat after a publish, a rollout command, an abort or a tag is answered by it.
//
//   change ─▶ changed(): dirty ─(PUBLISH_DELAY_MS, coalesced)─▶ new version ─▶ waiting polls answered
//   front-end ─poll(known)─▶ ack of `known` ─▶ settled() waiters released once every front-end acked

/** Changes that come together (a publish moves tracks, statements and signed answers) make one snapshot. */
const PUBLISH_DELAY_MS = 2;
/** A poll with nothing new is answered null after this, within the call's deadline (src/messages/manifester.ts). */
export const POLL_HOLD_MS = 20_000;
/** How long an operator's change waits for the front-ends to hold it before it returns anyway. */
const SETTLE_MS = 1_000;
/** A front-end that has not polled for this long (stopped, restarting) is not waited for. */
const POLLER_FORGET_MS = 3 * POLL_HOLD_MS;

/** Builds the snapshot of `version` in the form `kind` (an encoding, say): each kind asked for is built once per version. */
type Build<K extends string, S> = (version: string, kind: K) => S;

/** Told, per change, how long it took from the change until every front-end held it (seconds). */
export type DeliveryObserver = (seconds: number) => void;

/** Versions not yet held everywhere whose delivery time is still to be observed; older ones are dropped. */
const MAX_UNDELIVERED = 64;

interface Waiting<K, S> {
  readonly kind: K;
  readonly resolve: (snapshot: S | null) => void;
  readonly timer: NodeJS.Timeout;
}

interface Settling {
  readonly serial: number;
  readonly done: () => void;
}

export class LongPollPublisher<K extends string, S> {
  /** Versions of another start of the manifester never equal this one's. */
  private readonly epoch = randomBytes(6).toString('hex');
  private serial = 0;
  private dirty = true;
  private built = new Map<K, S>();
  private readonly waiting = new Set<Waiting<K, S>>();
  private readonly pollers = new Map<string, { serial: number; atMs: number }>();
  private readonly settling = new Set<Settling>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** When the first change not yet in a version was made. */
  private dirtySinceMs: number;
  private readonly undelivered: { readonly serial: number; readonly sinceMs: number }[] = [];

  /** `settleMs` and `now` are for tests. */
  constructor(
    private readonly build: Build<K, S>,
    private readonly delivered: DeliveryObserver = () => undefined,
    private readonly now: () => number = Date.now,
    private readonly settleMs = SETTLE_MS,
  ) {
    this.dirtySinceMs = now();
  }

  get version(): string {
    return `${this.epoch}:${this.serial}`;
  }

  /** Something a snapshot carries changed: the next one is made within PUBLISH_DELAY_MS when a front-end waits. */
  changed(): void {
    if (!this.dirty) this.dirtySinceMs = this.now();
    this.dirty = true;
    if (this.waiting.size > 0) this.timer ??= setTimeout(() => this.publish(), PUBLISH_DELAY_MS);
  }

  /** A front-end's ask: the snapshot when it differs from `known`, else the next one, or null after POLL_HOLD_MS. */
  poll(poller: string, known: string, kind: K): Promise<S | null> {
    this.acknowledge(poller, known);
    // Refused, not answered null: a front-end asks again at once after a null, and waits after a refusal.
    if (this.stopped) return Promise.reject(new UpdaterError('ACTOR_UNAVAILABLE', 'the manifester is stopping'));
    this.advance();
    if (known !== this.version) return Promise.resolve(this.snapshot(kind));
    return new Promise((resolve) => {
      const waiting: Waiting<K, S> = {
        kind,
        resolve,
        timer: setTimeout(() => {
          this.waiting.delete(waiting);
          resolve(null);
        }, POLL_HOLD_MS),
      };
      this.waiting.add(waiting);
    });
  }

  /**
   * Resolves once every front-end that polls holds a snapshot with every change made so far;
   * after SETTLE_MS regardless (a front-end that is restarting asks again when it is back).
   */
  settled(): Promise<void> {
    this.publish();
    const serial = this.serial;
    if (this.heldEverywhere(serial)) return Promise.resolve();
    return new Promise((resolve) => {
      const settling: Settling = {
        serial,
        done: () => {
          clearTimeout(timer);
          this.settling.delete(settling);
          resolve();
        },
      };
      const timer = setTimeout(settling.done, this.settleMs);
      this.settling.add(settling);
    });
  }

  /** Answers every waiting poll (null) and every waiting change, and refuses later polls: the manifester is stopping. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const w of this.waiting) {
      clearTimeout(w.timer);
      w.resolve(null);
    }
    this.waiting.clear();
    for (const s of [...this.settling]) s.done();
  }

  private publish(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.dirty) return;
    this.advance();
    for (const w of this.waiting) {
      clearTimeout(w.timer);
      w.resolve(this.snapshot(w.kind));
    }
    this.waiting.clear();
  }

  private advance(): void {
    if (!this.dirty) return;
    this.dirty = false;
    this.serial++;
    this.built = new Map();
    if (this.undelivered.length >= MAX_UNDELIVERED) this.undelivered.shift();
    this.undelivered.push({ serial: this.serial, sinceMs: this.dirtySinceMs });
  }

  private snapshot(kind: K): S {
    let built = this.built.get(kind);
    if (built === undefined) this.built.set(kind, (built = this.build(this.version, kind)));
    return built;
  }

  private acknowledge(poller: string, known: string): void {
    const at = known.lastIndexOf(':');
    const serial = at > 0 && known.slice(0, at) === this.epoch ? Number(known.slice(at + 1)) : -1;
    this.pollers.set(poller, { serial, atMs: this.now() });
    for (const s of [...this.settling]) if (this.heldEverywhere(s.serial)) s.done();
    while (this.undelivered.length > 0 && this.heldEverywhere(this.undelivered[0]!.serial)) {
      this.delivered((this.now() - this.undelivered.shift()!.sinceMs) / 1000);
    }
  }

  private heldEverywhere(serial: number): boolean {
    const since = this.now() - POLLER_FORGET_MS;
    for (const p of this.pollers.values()) if (p.atMs >= since && p.serial < serial) return false;
    return true;
  }
}
