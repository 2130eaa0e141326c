import type { ReleaseWire } from '../../shared/wire/keys.js';
import { signStatement } from '../../shared/release/statement.js';
import { stableSequenceOf } from './release-sequence.js';
import type { Track } from './tracks.js';

// The release statements a replica serves: one per (track, target, label, sequence), signed
// when the track table changes (synchronously, before a heartbeat can see the change) and again
// by a timer before half of their life has passed. A heartbeat only looks one up.
//
//   table change ─▶ sync(tracks): sign what is new, forget what is no longer served
//   timer        ─▶ renew(now):   sign again what passed RENEW_AT of its life
//   heartbeat    ─▶ slot(target): the current statement, a pointer read

/** What a statement is signed for: a target the manifester answers toward. */
export interface StatementTarget {
  readonly key: string;
  readonly hash: string;
  readonly version: string;
  readonly sequence: number;
}

/** Holds the current statement of one target; replaced in place when renewed. */
export interface StatementSlot {
  readonly target: StatementTarget;
  release: ReleaseWire;
  /** False once the target is no longer served: the slot is not renewed any more. */
  live: boolean;
}

/**
 * Share of a statement's life after which it is signed again; the timer's period adds at most a
 * tenth, so each is renewed before half of its life has passed. The docs state this one rule
 * (test/docs/release-renewal-doc.test.ts keeps them to it).
 */
export const RENEW_AT = 0.35;

export interface StatementCounters {
  /** A statement was signed: at a change of the table, by the renewal timer, or (never expected) on a heartbeat's path. */
  signed(cause: 'change' | 'renewal' | 'heartbeat'): void;
}

export class ReleaseStatements {
  private readonly slots = new Map<string, StatementSlot>();

  constructor(
    private readonly privateKey: Uint8Array,
    private readonly ttlSeconds: number,
    private readonly counters: StatementCounters,
    private readonly now: () => number = Date.now,
  ) {}

  /** How often the renewal timer should run: a tenth of a statement's life, between 100 ms and a minute. */
  get renewalPeriodMs(): number {
    return Math.min(60_000, Math.max(100, (this.ttlSeconds * 1000) / 10));
  }

  get size(): number {
    return this.slots.size;
  }

  /** Signs what the tracks now serve and has not been signed yet; forgets what they no longer serve. */
  sync(tracks: readonly Track[]): void {
    const wanted = new Set<string>();
    for (const track of tracks) {
      for (const target of servedTargets(track)) {
        const id = slotId(target);
        wanted.add(id);
        if (this.slots.has(id)) continue;
        this.slots.set(id, { target, release: this.sign(target), live: true });
        this.counters.signed('change');
      }
    }
    for (const [id, slot] of this.slots) {
      if (wanted.has(id)) continue;
      slot.live = false;
      this.slots.delete(id);
    }
  }

  /** Whether a slot a caller kept is still the one renewed for its target. */
  holds(slot: StatementSlot): boolean {
    return slot.live;
  }

  /** The slot of a target; signed here only if a change was missed (counted: it should never happen). */
  slot(target: StatementTarget): StatementSlot {
    const id = slotId(target);
    let slot = this.slots.get(id);
    if (!slot) {
      slot = { target, release: this.sign(target), live: true };
      this.slots.set(id, slot);
      this.counters.signed('heartbeat');
    }
    return slot;
  }

  /** Signs again every statement past RENEW_AT of its life; returns how many. */
  renew(): number {
    const nowSeconds = Math.floor(this.now() / 1000);
    let renewed = 0;
    for (const slot of this.slots.values()) {
      if (nowSeconds - slot.release.issued_at < this.ttlSeconds * RENEW_AT) continue;
      slot.release = this.sign(slot.target);
      this.counters.signed('renewal');
      renewed++;
    }
    return renewed;
  }

  private sign(target: StatementTarget): ReleaseWire {
    return signStatement(this.privateKey, { artifact: target.key, target_hash: target.hash, target_version: target.version },
      target.sequence, Math.floor(this.now() / 1000), this.ttlSeconds);
  }
}

/** The targets a track answers toward: its own, and its rollout's stable target while that is in force. */
export function servedTargets(track: Track): StatementTarget[] {
  const own = { key: track.key, hash: track.hash, version: track.version, sequence: track.sequence };
  const stable = track.rollout?.state !== 'complete' ? track.rollout?.stable : undefined;
  if (!stable) return [own];
  return [own, { key: track.key, hash: stable.hash, version: stable.version, sequence: stableSequenceOf(track) }];
}

function slotId(t: StatementTarget): string {
  return JSON.stringify([t.key, t.hash, t.version, t.sequence]);
}
