import { setTimeout as sleep } from 'node:timers/promises';
import { Gauge } from 'prom-client';
import type { TargetingIndex } from '../../messages/targeting-index.js';
import { ByteLru } from '../../shared/lru.js';
import { NO_ATTRIBUTES, type Attributes } from '../../shared/targeting/attributes.js';
import { matches } from '../../shared/targeting/filter.js';
import { firstDelayMs } from './test-delays.js';
import type { ActorContext } from '../runtime.js';

// What a front-end judges a rollout's group steps by, without a database trip
// (docs/rollouts.md, "Targeting"): the fleet's targeting index (group filters, the tags of
// tagged devices), followed by long poll, and the attributes each device last carried in a
// heartbeat to this front-end (a heartbeat without attributes is judged on those). Both are
// bounded by `fleet.targeting_index_mb`: the remembered attributes by what each set weighs, since
// a device may send 32 entries of 64-character keys and 128-character values (about 14 KiB as
// counted below), not by a count of devices.

const RETRY_MS = 1_000;
/** A remembered device: its map entry and the attribute object's header, beside the text counted below. */
const REMEMBERED_BYTES = 256;
/** One attribute's property slot and the headers of its key and value strings, beside their text. */
const ATTRIBUTE_BYTES = 48;

/** What a remembered set costs the heap, at most: every text at two bytes a UTF-16 unit (V8 keeps non-Latin text so). */
function rememberedBytes(deviceId: string, attributes: Attributes): number {
  let bytes = REMEMBERED_BYTES + 2 * deviceId.length;
  for (const key in attributes) bytes += ATTRIBUTE_BYTES + 2 * (key.length + attributes[key]!.length);
  return bytes;
}

export class TargetingFacts {
  private index: TargetingIndex | undefined;
  private readonly carried: ByteLru<string, Attributes>;

  constructor(budgetBytes: number) {
    this.carried = new ByteLru(budgetBytes);
  }

  get version(): string {
    return this.index?.version ?? '';
  }

  get bytes(): number {
    return (this.index?.bytes ?? 0) + this.carried.usedBytes;
  }

  apply(index: TargetingIndex): void {
    this.index = index;
  }

  /** The attributes to judge this heartbeat by: its own (remembered), else the last it carried here. */
  attributesOf(deviceId: string, carried: Attributes | undefined): Attributes {
    if (carried !== undefined) {
      // A set larger than the whole budget (a tiny budget) is not remembered, nor is an older one kept.
      if (!this.carried.set(deviceId, carried, rememberedBytes(deviceId, carried))) this.carried.delete(deviceId);
      return carried;
    }
    return this.carried.get(deviceId) ?? NO_ATTRIBUTES;
  }

  /** Whether the device, as this heartbeat shows it, is a member of `group` now. */
  memberOf(group: string, device: { deviceId: string; attributes: Attributes; artifact: string; versionHash: string }, nowMs: number): boolean {
    const filter = this.index?.groups.get(group);
    if (!filter) return false;
    const tags = this.index!.tags.get(device.deviceId) ?? [];
    return matches(filter, { tags, attributes: device.attributes, artifact: device.artifact, versionHash: device.versionHash, lastSeen: Math.floor(nowMs / 1000) }, nowMs);
  }
}

/**
 * The facts of a front-end, following the fleet's index until `stop` (none with the inventory
 * off). `first` resolves once the first index is held (at once with the inventory off).
 */
export function followTargetingFacts(ctx: ActorContext): { facts: TargetingFacts; first: Promise<void>; stop(): void } {
  const facts = new TargetingFacts(ctx.config.fleet.targetingIndexBytes);
  new Gauge({
    name: 'updater_targeting_index_bytes',
    help: 'About what the targeting index and the remembered device attributes a front-end holds weigh (fleet.targeting_index_mb each)',
    labelNames: ['thread'],
    registers: [ctx.registry],
    collect() {
      this.set({ thread: ctx.name }, facts.bytes);
    },
  });
  let stopped = !ctx.config.fleet.enabled;
  let held!: () => void;
  const first = new Promise<void>((resolve) => (held = resolve));
  if (stopped) held();
  const follow = async (): Promise<void> => {
    const holdMs = stopped ? 0 : firstDelayMs('targeting index', ctx.log);
    if (holdMs > 0) await sleep(holdMs);
    while (!stopped) {
      try {
        const next = await ctx.call('fleet', (f) => f.targetingIndex(ctx.name, facts.version));
        if (next && !stopped) {
          facts.apply(next);
          held();
        }
      } catch (err) {
        if (stopped) return;
        // The fleet actor is restarting, or its database is away: the last index stays in force.
        ctx.log.debug({ err }, 'targeting index not refreshed; asking again');
        await sleep(RETRY_MS);
      }
    }
  };
  void follow();
  return { facts, first, stop: () => (stopped = true) };
}
