import { inCohort } from './cohort.js';

// Which target a heartbeat on a track with a staged rollout is answered toward
// (docs/rollouts.md, "Who gets the new build"). Pure and shared: the manifester, which owns
// the rollouts, and every front-end, which answers from the manifester's snapshot
// (src/messages/decision-snapshot.ts), run this one function, so both answer alike.

/** What routing reads of a rollout: the manifester's Rollout has these fields, and so does a snapshot's. */
export interface RoutingFacts {
  readonly target: { readonly hash: string };
  readonly state: 'running' | 'paused' | 'complete' | 'aborted';
  readonly percent: number;
  /** Aborted with rollback: devices on the target are offered the stable target. */
  readonly rollback: boolean;
  /** Targets of replaced rollouts whose devices are not sent back (no downgrade). */
  readonly held: readonly string[];
}

export type Route = 'target' | 'stable' | 'stay';

/** The rollout's target, the stable target, or `stay` (a replaced rollout's target, kept). */
export function routeDevice(r: RoutingFacts, deviceId: string, versionHash: string): Route {
  if (r.state === 'complete') return 'target';
  if (versionHash === r.target.hash) return r.state === 'aborted' && r.rollback ? 'stable' : 'target';
  if (r.state === 'running' && inCohort(deviceId, r.target.hash, r.percent)) return 'target';
  // No downgrade for a device on the target of a rollout this one replaced (not rolled back).
  if (r.held.includes(versionHash)) return 'stay';
  return 'stable';
}
