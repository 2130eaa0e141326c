import type { OfferRecord } from '../../../messages/fleet.js';

// The rollout offers the manifester makes, on their way to the fleet actor (recordOffers): a
// report counts toward a rollout's health only from a device that was offered its target from
// the version it reports leaving (docs/rollouts.md, "Whose reports count"). A device that
// checks in many times while it downloads is sent once: offers already sent are remembered,
// and forgotten every few minutes (or past a bound), so one lost message costs a few minutes of
// counts at most and the memory stays bounded whatever the fleet.

const SEND_AFTER_MS = 200;
const MAX_BATCH = 2048;
const MAX_REMEMBERED = 100_000;
const FORGET_EVERY_MS = 5 * 60_000;

export class OfferFeed {
  private queued: OfferRecord[] = [];
  private sent = new Set<string>();
  private forgetAtMs: number;
  private timer: NodeJS.Timeout | undefined;

  /** `send` posts one batch, fire-and-forget; `now` is injectable for tests. */
  constructor(private readonly send: (offers: readonly OfferRecord[]) => void, private readonly now: () => number = Date.now) {
    this.forgetAtMs = now() + FORGET_EVERY_MS;
  }

  /** The manifester answered `deviceId`, running `fromHash`, toward the rollout target `targetHash`. */
  offered(deviceId: string, targetHash: string, fromHash: string): void {
    const now = this.now();
    if (now >= this.forgetAtMs || this.sent.size >= MAX_REMEMBERED) {
      this.sent = new Set();
      this.forgetAtMs = now + FORGET_EVERY_MS;
    }
    const key = `${deviceId}\n${targetHash}\n${fromHash}`;
    if (this.sent.has(key)) return;
    this.sent.add(key);
    this.queued.push({ deviceId, targetHash, fromHash, offeredAtMs: now });
    if (this.queued.length >= MAX_BATCH) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), SEND_AFTER_MS);
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.queued.length === 0) return;
    const batch = this.queued;
    this.queued = [];
    this.send(batch);
  }
}
