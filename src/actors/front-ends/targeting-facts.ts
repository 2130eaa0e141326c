import { setTimeout as sleep } from 'node:timers/promises';
import { Gauge } from 'prom-client';
import type { TargetingIndex } from '../../messages/targeting-index.js';
import { CountLru } from '../../shared/lru.js';
import { NO_ATTRIBUTES, type Attributes } from '../../shared/targeting/attributes.js';
import { matches } from '../../shared/targeting/filter.js';
import type { ActorContext } from '../runtime.js';

// What a front-end judges a rollout's group steps by, without a database trip
// (docs/rollouts.md, "Targeting"): the fleet's targeting index (group filters, the tags of
// tagged devices), followed by long poll, and the attributes each device last carried in a
// heartbeat to this front-end (a heartbeat without attributes is judged on those). Both are
// bounded by `fleet.targeting_index_mb`.

const RETRY_MS = 1_000;
/** A remembered device's attributes with its id and map entry, for sizing the memory by the budget. */
const REMEMBERED_BYTES = 256;

export class TargetingFacts {
  private index: TargetingIndex | undefined;
  private readonly carried: CountLru<string, Attributes>;

  constructor(budgetBytes: number) {
    this.carried = new CountLru(Math.max(1, Math.floor(budgetBytes / REMEMBERED_BYTES)));
  }

  get version(): string {
    return this.index?.version ?? '';
  }

  get bytes(): number {
    return (this.index?.bytes ?? 0) + this.carried.size * REMEMBERED_BYTES;
  }

  apply(index: TargetingIndex): void {
    this.index = index;
  }

  /** The attributes to judge this heartbeat by: its own (remembered), else the last it carried here. */
  attributesOf(deviceId: string, carried: Attributes | undefined): Attributes {
    if (carried !== undefined) {
      this.carried.set(deviceId, carried);
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

/** The facts of a front-end, following the fleet's index until `stop` (none with the inventory off). */
export function followTargetingFacts(ctx: ActorContext): { facts: TargetingFacts; stop(): void } {
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
  const follow = async (): Promise<void> => {
    while (!stopped) {
      try {
        const next = await ctx.call('fleet', (f) => f.targetingIndex(ctx.name, facts.version));
        if (next && !stopped) facts.apply(next);
      } catch (err) {
        if (stopped) return;
        // The fleet actor is restarting, or its database is away: the last index stays in force.
        ctx.log.debug({ err }, 'targeting index not refreshed; asking again');
        await sleep(RETRY_MS);
      }
    }
  };
  void follow();
  return { facts, stop: () => (stopped = true) };
}
