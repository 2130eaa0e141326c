import t from 'tap';
import { inCohort } from '../../../src/shared/decision/cohort.js';
import { routeDevice, type RoutingFacts } from '../../../src/shared/decision/route.js';
import { WindowClock } from '../../../src/shared/decision/window-clock.js';
import { parseRolloutPlan } from '../../../src/shared/rollout-plan.js';

// Routing with targeting (docs/rollouts.md, "Targeting"): a group step admits its members once
// reached, the percent admits its cohort, a window closed for the device makes it wait (in its
// own zone with tz "device"), and a scheduled rollout offers its target to nobody.

const T = 't'.repeat(64);
const OLD = 'o'.repeat(64);
// Monday 2026-11-30 12:00 UTC: 13:00 in Berlin, 07:00 in New York.
const NOON_UTC = Date.UTC(2026, 10, 30, 12, 0);
const clock = new WindowClock(() => NOON_UTC);
const ids = Array.from({ length: 400 }, (_, i) => `dev-${i}`);
const outside5 = ids.filter((id) => !inCohort(id, T, 5));

function rollout(plan: unknown, step: number, percent: number, state: RoutingFacts['state'] = 'running'): RoutingFacts {
  return { target: { hash: T }, state, percent, rollback: false, held: [], plan: parseRolloutPlan(plan), step };
}

const member = (groups: string[]) => (group: string) => groups.includes(group);

t.test('a group step admits its members once reached, beside the cohort of the highest percent reached', async (t) => {
  const plan = { steps: [{ group: 'canary' }, 5, { group: 'berlin' }, 100], step_interval: 'manual' };
  const device = (deviceId: string, groups: string[]) => ({ deviceId, versionHash: OLD, memberOf: member(groups) });
  const first = rollout(plan, 0, 0);
  t.equal(routeDevice(first, device(outside5[0]!, ['canary']), clock).route, 'target', 'a canary member at the first step');
  t.equal(routeDevice(first, device(outside5[0]!, ['berlin']), clock).route, 'stable', 'a later group\'s member waits for its step');
  t.equal(routeDevice(first, device(ids.find((id) => inCohort(id, T, 5))!, []), clock).route, 'stable', 'no percent reached: no cohort');
  const third = rollout(plan, 2, 5);
  t.equal(routeDevice(third, device(outside5[0]!, ['berlin']), clock).route, 'target', 'berlin once its step is reached');
  t.equal(routeDevice(third, device(outside5[0]!, ['canary']), clock).route, 'target', 'earlier groups stay admitted');
  t.equal(routeDevice(third, device(ids.find((id) => inCohort(id, T, 5))!, []), clock).route, 'target', 'and 5 % of the rest');
  t.equal(routeDevice(third, device(outside5[0]!, []), clock).route, 'stable', 'the rest stay on the stable target');
  t.equal(routeDevice(third, { deviceId: outside5[0]!, versionHash: OLD }, clock).route, 'stable', 'no memberships known: no group admits it');
  t.equal(routeDevice(rollout(plan, 2, 5, 'paused'), device(outside5[0]!, ['canary']), clock).route, 'stable', 'paused: nobody new');
});

t.test('a scheduled rollout offers its target to nobody, and keeps devices already on it', async (t) => {
  const r = rollout({ steps: [{ group: 'canary' }, 100], start_at: 4_000_000_000 }, 0, 0, 'scheduled');
  t.equal(routeDevice(r, { deviceId: 'a', versionHash: OLD, memberOf: () => true }, clock).route, 'stable');
  t.equal(routeDevice(r, { deviceId: 'a', versionHash: T }, clock).route, 'target');
});

t.test('outside the window a device waits, in the window\'s zone or its own', async (t) => {
  const plan = (tz: string) => ({ steps: [50, 100], window: { start: '02:00', end: '04:00', tz } });
  const berlin = rollout(plan('Europe/Berlin'), 0, 50);
  const waiting = routeDevice(berlin, { deviceId: ids[0]!, versionHash: OLD }, clock);
  t.equal(waiting.route, 'wait', 'Berlin 13:00 is outside 02:00-04:00');
  t.equal(waiting.waitSeconds, 13 * 3600, 'until 02:00 Berlin, 13 hours on');
  t.equal(routeDevice(berlin, { deviceId: ids[0]!, versionHash: T }, clock).route, 'target', 'a device on the target is not held back');
  const deviceTime = rollout({ steps: [50, 100], window: { start: '06:30', end: '08:00', tz: 'device' } }, 0, 50);
  const inNewYork = { deviceId: outside5.find((id) => !inCohort(id, T, 50))!, versionHash: OLD, attributes: { tz: 'America/New_York' } };
  t.equal(routeDevice(deviceTime, inNewYork, clock).route, 'stable', 'New York 07:00 is inside: routed as usual (outside the 50 % cohort)');
  const utc = routeDevice(deviceTime, { ...inNewYork, attributes: {} }, clock);
  t.equal(utc.route, 'wait', 'no tz attribute: UTC 12:00 is outside');
  t.equal(utc.waitSeconds, 18.5 * 3600, 'until 06:30 UTC the next day');
  t.equal(routeDevice(deviceTime, { ...inNewYork, attributes: { tz: 'Not/AZone' } }, clock).route, 'wait', 'a tz that names no zone counts as UTC');
});
