import type { GroupView } from '../../../messages/fleet.js';
import { groupsOf, type RolloutPlan } from '../../../shared/rollout-plan.js';
import { refuse } from '../../../shared/targeting/names.js';
import type { Track } from '../tracks.js';

// The groups a rollout's steps name (docs/rollouts.md, "Group steps") are the fleet actor's, the
// rollouts the manifester's. A publish may name only groups that exist, and a group that a
// rollout not complete or aborted names may not be deleted. Each check is made where its act
// is, under the tracks' lock (TrackAdmin: a single node's table lock; in a cluster the tracks'
// advisory lock too), so that a delete and a publish naming the group, on one replica or on two,
// never both succeed: the later is refused, GROUP_IN_USE or INVALID_ROLLOUT.

/** The fleet actor's groups, as the manifester asks for them (undefined without an inventory). */
export interface FleetGroups {
  names(): Promise<string[]>;
  delete(name: string): Promise<GroupView | null>;
}

/** A publish's group steps must name groups that exist (INVALID_ROLLOUT naming the step), so a typo does not hold a rollout at a step nobody is in. */
export function refuseUnknownGroups(plan: RolloutPlan, known: readonly string[]): void {
  plan.steps.forEach((step, i) => {
    if (typeof step === 'object' && !known.includes(step.group)) {
      refuse(`rollout.steps[${i}].group`, `names ${JSON.stringify(step.group)}, which is not a group (PUT /admin/groups/{name} first)`, 'INVALID_ROLLOUT');
    }
  });
}

/** Whether the plan has a group step (only then are the groups asked for). */
export const namesGroups = (plan: RolloutPlan | undefined): plan is RolloutPlan => plan !== undefined && groupsOf(plan).length > 0;

/** The first track whose rollout, not complete or aborted, names the group. */
export function trackNaming(tracks: readonly Track[], group: string): Track | undefined {
  return tracks.find((t) => {
    const r = t.rollout;
    return r !== undefined && r.state !== 'complete' && r.state !== 'aborted' && groupsOf(r.plan).includes(group);
  });
}
