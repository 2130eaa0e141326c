import t, { type Test } from 'tap';
import { inCohort } from '../../../../src/shared/decision/cohort.js';
import { routeDevice, type RoutingFacts } from '../../../../src/shared/decision/route.js';
import { WindowClock } from '../../../../src/shared/decision/window-clock.js';
import {
  advance, applyAction, judgeHealth, replaced, rolloutView, setPercent, startRollout, successorBasis,
  type Rollout, type TargetRef,
} from '../../../../src/actors/manifester/rollout/rollout.js';
import { parseRolloutPlan } from '../../../../src/shared/rollout-plan.js';

const route = (r: RoutingFacts, deviceId: string, versionHash: string) => routeDevice(r, { deviceId, versionHash }, new WindowClock()).route;

const STABLE: TargetRef = { hash: 'a'.repeat(64), version: '1.0.0', size: 100 };
const T: TargetRef = { hash: 'b'.repeat(64), version: '1.1.0', size: 110 };
const OTHER = 'c'.repeat(64);
const HOUR = 3_600_000;
const plan = parseRolloutPlan({ steps: [10, 50, 100], step_interval: '1h', max_failure_rate: 0.2, min_reports: 10 });
const start = (): Rollout => startRollout(plan, T, { stable: STABLE, held: [] }, 0);

function conflict(t: Test, fn: () => unknown, what: string): void {
  t.throws(fn, { code: 'ROLLOUT_CONFLICT' }, what);
}

t.test('a rollout starts running at its first step with a step due one interval later', async (t) => {
  const r = start();
  t.match(rolloutView(r), { target_hash: T.hash, stable_hash: STABLE.hash, percent: 10, state: 'running', paused_reason: null, steps: [10, 50, 100], step_interval: '1h', next_step_at: 3600, reports: { success: 0, failure: 0 } });
  const immediate = startRollout(parseRolloutPlan({ steps: [100] }), T, { stable: STABLE, held: [] }, 0);
  t.equal(immediate.state, 'complete', 'a single step of 100 completes at once');
  t.same(immediate.stable, T);
});

t.test('steps advance on the timer, one per interval, and 100 completes', async (t) => {
  const r = start();
  t.equal(advance(r, HOUR - 1), r, 'nothing before the step is due');
  const second = advance(r, HOUR);
  t.equal(second.percent, 50);
  t.equal(second.nextStepAtMs, 2 * HOUR);
  const late = advance(second, 10 * HOUR);
  t.equal(late.state, 'complete', 'the last step completes');
  t.equal(late.percent, 100);
  t.same(late.stable, T, 'the target becomes the stable target');
  t.equal(late.nextStepAtMs, null);
  t.equal(advance(late, 20 * HOUR), late, 'a complete rollout never moves');
  const afterStop = advance(start(), 5 * HOUR);
  t.equal(afterStop.percent, 50, 'after a long stop it moves one step, not several');
  t.equal(afterStop.nextStepAtMs, 6 * HOUR, 'and the interval restarts from now');
});

t.test('an operator pauses and resumes; a paused rollout does not step', async (t) => {
  const paused = applyAction(start(), 'pause', false, 10);
  t.equal(paused.state, 'paused');
  t.equal(paused.pausedReason, 'operator');
  t.equal(paused.nextStepAtMs, null);
  t.equal(advance(paused, 10 * HOUR), paused, 'no step while paused');
  conflict(t, () => applyAction(paused, 'pause', false, 20), 'pausing a paused rollout');
  const resumed = applyAction(paused, 'resume', false, 5 * HOUR);
  t.equal(resumed.state, 'running');
  t.equal(resumed.pausedReason, null);
  t.equal(resumed.healthSinceMs, 5 * HOUR, 'only reports after the resume count');
  t.equal(resumed.nextStepAtMs, 6 * HOUR);
  conflict(t, () => applyAction(resumed, 'resume', false, 20), 'resuming a running rollout');
});

t.test('the failure rate pauses a running rollout once min_reports are in', async (t) => {
  const r = start();
  t.equal(judgeHealth(r, { success: 0, failure: 0 }), r, 'nothing to judge, nothing changes');
  const few = judgeHealth(r, { success: 2, failure: 7 });
  t.equal(few.state, 'running', 'below min_reports it keeps running');
  t.same(few.reports, { success: 2, failure: 7 }, 'but shows the counts');
  t.equal(judgeHealth(r, { success: 8, failure: 2 }).state, 'running', 'a rate equal to the maximum is not above it');
  const bad = judgeHealth(r, { success: 7, failure: 3 });
  t.equal(bad.state, 'paused');
  t.equal(bad.pausedReason, 'failure_rate');
  t.equal(bad.nextStepAtMs, null);
  t.equal(judgeHealth(bad, { success: 0, failure: 50 }), bad, 'a paused rollout is not judged again');
  const resumed = applyAction(bad, 'resume', false, HOUR);
  t.same(resumed.reports, { success: 0, failure: 0 }, 'a resume starts counting afresh');
  t.equal(judgeHealth(resumed, { success: 10, failure: 0 }).state, 'running');
  const strict = startRollout(parseRolloutPlan({ steps: [10, 100], max_failure_rate: 0, min_reports: 1 }), T, { stable: STABLE, held: [] }, 0);
  t.equal(judgeHealth(strict, { success: 100, failure: 1 }).pausedReason, 'failure_rate', 'a maximum of 0 pauses on the first failure');
});

t.test('complete and abort end a rollout; nothing is allowed after', async (t) => {
  for (const from of [start(), applyAction(start(), 'pause', false, 1)]) {
    const done = applyAction(from, 'complete', false, 2);
    t.equal(done.state, 'complete');
    t.equal(done.percent, 100);
    t.same(done.stable, T);
    for (const action of ['pause', 'resume', 'abort', 'complete'] as const) conflict(t, () => applyAction(done, action, false, 3), `${action} after complete`);
    conflict(t, () => setPercent(done, 20, 3), 'percent after complete');

    const gone = applyAction(from, 'abort', false, 2);
    t.equal(gone.state, 'aborted');
    t.equal(gone.rollback, false);
    t.same(gone.stable, STABLE, 'the stable target stays');
    for (const action of ['pause', 'resume', 'abort', 'complete'] as const) conflict(t, () => applyAction(gone, action, false, 3), `${action} after abort`);
    conflict(t, () => setPercent(gone, 20, 3), 'percent after abort');
    const later = applyAction(gone, 'abort', true, 3);
    t.equal(later.rollback, true, 'an aborted rollout may still be rolled back');
    conflict(t, () => applyAction(later, 'abort', true, 4), 'but only once');
  }
  t.equal(applyAction(start(), 'abort', true, 1).rollback, true);
  t.throws(() => applyAction(start(), 'pause', true, 1), { code: 'INVALID_FIELD' }, 'rollback belongs to abort only');
});

t.test('the operator sets the percent', async (t) => {
  const r = setPercent(start(), 30, HOUR / 2);
  t.equal(r.percent, 30);
  t.equal(r.state, 'running');
  t.equal(r.nextStepAtMs, HOUR / 2 + HOUR, 'the next step is one interval after the change');
  t.equal(advance(r, 2 * HOUR).percent, 50, 'the timer moves on to the first step above it');
  const paused = setPercent(applyAction(start(), 'pause', false, 1), 40, 2);
  t.equal(paused.state, 'paused', 'a paused rollout stays paused');
  t.equal(paused.percent, 40);
  t.equal(paused.nextStepAtMs, null);
  t.equal(setPercent(start(), 0, 1).percent, 0, '0 % holds everyone back');
  t.equal(setPercent(start(), 100, 1).state, 'complete', '100 % completes');
});

t.test('devices are routed by cohort and state', async (t) => {
  const ids = Array.from({ length: 200 }, (_, i) => `dev-${i}`);
  const r = start();
  const inside = ids.find((id) => inCohort(id, T.hash, 10))!;
  const outside = ids.find((id) => !inCohort(id, T.hash, 10))!;
  t.equal(route(r, inside, OTHER), 'target', 'in the cohort: the target');
  t.equal(route(r, outside, OTHER), 'stable', 'outside: the stable target');
  t.equal(route(r, outside, T.hash), 'target', 'a device on the target is never sent back');
  const paused = applyAction(r, 'pause', false, 1);
  t.equal(route(paused, inside, OTHER), 'stable', 'paused: no one new is offered the target');
  t.equal(route(paused, inside, T.hash), 'target', 'paused: devices on it stay');
  const aborted = applyAction(r, 'abort', false, 1);
  t.equal(route(aborted, inside, OTHER), 'stable');
  t.equal(route(aborted, inside, T.hash), 'target', 'aborted without rollback: no downgrade');
  t.equal(route(applyAction(r, 'abort', true, 1), inside, T.hash), 'stable', 'aborted with rollback: back to stable');
  t.equal(route(applyAction(r, 'complete', false, 1), outside, OTHER), 'target', 'complete: everyone');
});

t.test('a new publish replaces a rollout and remembers its target', async (t) => {
  const r = start();
  const old = replaced(r);
  t.equal(old.state, 'aborted');
  t.equal(old.rollback, false);
  const basis = successorBasis({ ...T, rollout: old });
  t.same(basis, { stable: STABLE, held: [T.hash] }, 'the stable target carries over; the old target is held');
  const next = startRollout(plan, { hash: OTHER, version: '1.2.0', size: 120 }, basis, 5);
  const outside = Array.from({ length: 200 }, (_, i) => `dev-${i}`).find((id) => !inCohort(id, OTHER, 10))!;
  t.equal(route(next, outside, T.hash), 'stay', 'devices on the replaced target are not downgraded');
  t.same(successorBasis({ ...T, rollout: applyAction(r, 'abort', true, 1) }).held, [], 'a rolled-back target is not held');
  t.same(successorBasis(T), { stable: T, held: [] }, 'without a rollout the track\'s target is stable');
  t.same(successorBasis({ ...T, rollout: applyAction(r, 'complete', false, 1) }).stable, T);
  t.equal(replaced(applyAction(r, 'complete', false, 1)).state, 'complete', 'a finished rollout is left as it is');
  const scheduled = startRollout(parseRolloutPlan({ steps: [100], start_at: 4_000_000_000 }), { hash: OTHER, version: '1.2.0', size: 120 }, basis, 5);
  t.equal(scheduled.state, 'scheduled');
  t.equal(replaced(scheduled).state, 'aborted', 'a scheduled rollout is replaced like a running one');
});

t.test('the rollout object of a publish is validated', async (t) => {
  const bad: [unknown, string][] = [
    [null, 'rollout'], [[], 'rollout'], [{ steps: [] }, 'rollout.steps'], [{ steps: [10, 50] }, 'rollout.steps'],
    [{ steps: [50, 10, 100] }, 'rollout.steps'], [{ steps: [10, 10, 100] }, 'rollout.steps'], [{ steps: [0, 100] }, 'rollout.steps[0]'],
    [{ steps: [10, 101] }, 'rollout.steps[1]'], [{ steps: ['10', 100] }, 'rollout.steps[0]'], [{ steps: [10.001, 100] }, 'rollout.steps[0]'],
    [{ steps: [100], max_failure_rate: 1.5 }, 'rollout.max_failure_rate'], [{ steps: [100], max_failure_rate: -0.1 }, 'rollout.max_failure_rate'],
    [{ steps: [100], step_interval: 'soon' }, 'rollout.step_interval'], [{ steps: [100], step_interval: 3600 }, 'rollout.step_interval'],
    [{ steps: [100], step_interval: '10ms' }, 'rollout.step_interval'], [{ steps: [100], min_reports: -1 }, 'rollout.min_reports'],
    [{ steps: [100], min_reports: 2.5 }, 'rollout.min_reports'], [{ steps: [100], surprise: 1 }, 'rollout.surprise'],
  ];
  for (const [value, field] of bad) t.throws(() => parseRolloutPlan(value), { code: 'INVALID_ROLLOUT', details: { field } }, JSON.stringify(value));
  t.same(parseRolloutPlan({ steps: [5, 25, 50, 100] }), { steps: [5, 25, 50, 100], stepInterval: '1h', stepIntervalMs: HOUR, maxFailureRate: 0.1, minReports: 10 }, 'defaults');
});
