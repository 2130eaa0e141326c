import { adminCall } from '../test/helpers/admin.js';
import type { CyclingVariant, HeartbeatShape } from './fleet-load.js';

// The heartbeat bench's `targeted` kind (issue 39): a track whose rollout runs a group step in
// a maintenance window, beside the plain track of the `current` kind on the same server, in
// the same rounds. A tenth of its own fleet of devices runs the rollout's target and carries
// the tag the group selects; the rest run the stable target. Every heartbeat is answered
// without an action (up to date on its route), so what the ratio to the plain track measures
// is the routing itself: the window, the group membership from the targeting index, the cohort.

export const TARGETED_TRACK = 'targeted';
/** One device in TAGGED_EVERY is tagged (and on the target): 10,000 of 100,000. */
export const TAGGED_EVERY = 10;

export interface TargetedShapes {
  readonly shape: HeartbeatShape;
  readonly variant: CyclingVariant;
}

/** Publishes the track with its rollout and the group (the kind's devices are a fleet of their own, heartbeat.ts). */
export async function prepareTargeted(url: string, stable: { path: string; hash: string }, target: { path: string; hash: string }): Promise<TargetedShapes> {
  const ok = async (what: string, answer: Promise<{ status: number; json: unknown }>) => {
    const { status, json } = await answer;
    if (status !== 200) throw new Error(`${what}: ${status} ${JSON.stringify(json)}`);
  };
  await ok('the group', adminCall(url, 'PUT', '/admin/groups/canary', { filter: { tags: ['canary'] } }));
  await ok('the stable target', adminCall(url, 'POST', '/admin/artifacts', { name: TARGETED_TRACK, version: '2.0.0', binary: stable.path }));
  // A window open from an hour ago to three hours on, in each device's own zone (UTC without a tz attribute).
  const hour = new Date().getUTCHours();
  const hh = (h: number) => `${String((h + 24) % 24).padStart(2, '0')}:00`;
  await ok('the rollout', adminCall(url, 'POST', '/admin/artifacts', {
    name: TARGETED_TRACK, version: '3.0.0', binary: target.path,
    rollout: { steps: [{ group: 'canary' }, 5, 100], step_interval: 'manual', window: { start: hh(hour - 1), end: hh(hour + 3), tz: 'device' } },
  }));
  return {
    shape: { versionHash: stable.hash, artifact: TARGETED_TRACK },
    variant: { every: TAGGED_EVERY, shape: { versionHash: target.hash, version: '3.0.0', artifact: TARGETED_TRACK } },
  };
}

/** Tags the devices on the target (after the pass that recorded every device): the group step admits them. */
export async function tagCanaries(url: string, targetHash: string): Promise<number> {
  const answer = await adminCall(url, 'POST', '/admin/tags', { filter: { artifact: TARGETED_TRACK, version_hash: targetHash }, add: ['canary'] });
  if (answer.status !== 200) throw new Error(`tagging: ${answer.status} ${JSON.stringify(answer.json)}`);
  return Number(answer.json.devices);
}
