import type { TargetFilter } from '../shared/targeting/filter.js';

// What the fleet actor publishes to each front-end so that a rollout's group steps are judged
// at the heartbeat without a database trip (docs/rollouts.md, "Targeting"): every group's
// filter, and the tags of tagged devices. Attributes are not in it: a heartbeat carries its
// device's. Bounded by `fleet.targeting_index_mb`; a device past the budget is judged without
// tags (counted, and logged once).

export interface TargetingIndex {
  /** Changes with every index, and with every start of the fleet actor. */
  readonly version: string;
  readonly groups: ReadonlyMap<string, TargetFilter>;
  /** Device id → its tags, sorted. */
  readonly tags: ReadonlyMap<string, readonly string[]>;
  /** Tagged devices left out for the budget. */
  readonly leftOut: number;
  /** About what it weighs in a front-end's heap. */
  readonly bytes: number;
}
