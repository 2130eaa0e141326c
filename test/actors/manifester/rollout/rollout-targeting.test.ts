import t from 'tap';
import { advance, applyAction, judgeHealth, replaced, rolloutView, setPercent, startRollout, type TargetRef } from '../../../../src/actors/manifester/rollout/rollout.js';
import { decodeRollout, encodeRollout } from '../../../../src/actors/manifester/rollout/rollout-codec.js';
import { publishEvents, rolloutEvent } from '../../../../src/actors/manifester/track-events.js';
import { parseRolloutPlan } from '../../../../src/shared/rollout-plan.js';

// The rollout state machine with targeting, on an injected clock: group steps and the step
// index, manual steps, the scheduled state, and steps that wait for the window.

const STABLE: TargetRef = { hash: 'a'.repeat(64), version: '1.0.0', size: 100 };
const T: TargetRef = { hash: 'b'.repeat(64), version: '1.1.0', size: 110 };
const HOUR = 3_600_000;
const basis = { stable: STABLE, held: [] };
/** Friday 2026-11-27 00:00 UTC. */
const FRIDAY = Date.parse('2026-11-27T00:00:00Z');

t.test('group steps: the step index moves, the percent is the highest percent reached', async (t) => {
  const plan = parseRolloutPlan({ steps: [{ group: 'canary' }, 5, { group: 'lab' }, 25, 100], step_interval: '1h' });
  let r = startRollout(plan, T, basis, 0);
  t.match(rolloutView(r, 0), { state: 'running', step: 0, percent: 0, steps: [{ group: 'canary' }, 5, { group: 'lab' }, 25, 100], next_step_at: 3600, start_at: null, window: null });
  const seen: [number, number][] = [];
  for (let hour = 1; r.state === 'running'; hour++) {
    r = advance(r, hour * HOUR);
    seen.push([r.step, r.percent]);
  }
  t.same(seen, [[1, 5], [2, 5], [3, 25], [4, 100]], 'each step in turn; the last completes');
  t.equal(r.state, 'complete');
});

t.test('manual steps wait for "advance"; advance is refused unless running', async (t) => {
  const plan = parseRolloutPlan({ steps: [{ group: 'canary' }, 5, 100], step_interval: 'manual' });
  let r = startRollout(plan, T, basis, 0);
  t.equal(r.nextStepAtMs, null);
  t.equal(advance(r, 1000 * HOUR), r, 'the timer never moves it');
  t.equal(rolloutView(r, 0).next_step_at, null);
  r = applyAction(r, 'advance', false, HOUR);
  t.same([r.state, r.step, r.percent], ['running', 1, 5]);
  const paused = applyAction(r, 'pause', false, HOUR);
  t.throws(() => applyAction(paused, 'advance', false, HOUR), { code: 'ROLLOUT_CONFLICT' }, 'not while paused');
  r = applyAction(r, 'advance', false, 2 * HOUR);
  t.same([r.state, r.percent], ['complete', 100], 'advancing onto 100 completes');
  t.throws(() => applyAction(r, 'advance', false, 2 * HOUR), { code: 'ROLLOUT_CONFLICT' });
  t.same(decodeRollout(JSON.parse(JSON.stringify(encodeRollout(paused))), T.hash), paused, 'a manual rollout survives the state file');
});

t.test('start_at: scheduled until then, nobody in it; pause, abort and complete apply', async (t) => {
  const plan = parseRolloutPlan({ steps: [5, 50, 100], step_interval: '1h', start_at: 10 * 3600 });
  const r = startRollout(plan, T, basis, 0);
  t.match(rolloutView(r, 0), { state: 'scheduled', step: 0, percent: 0, start_at: 36000, next_step_at: 36000 });
  t.equal(advance(r, 10 * HOUR - 1), r, 'not before its time');
  t.equal(judgeHealth(r, { success: 0, failure: 50 }), r, 'health is not judged before it runs');
  const started = advance(r, 10 * HOUR);
  t.match(rolloutView(started, 10 * HOUR), { state: 'running', step: 0, percent: 5, next_step_at: 11 * 3600 }, 'then it runs from its first step');
  t.equal(started.healthSinceMs, 10 * HOUR, 'reports count from the start');
  t.equal(rolloutEvent('app', r, started, 10 * HOUR)?.type, 'updater.rollout.started');
  t.throws(() => setPercent(r, 50, 0), { code: 'ROLLOUT_CONFLICT' }, 'no percent before it starts');
  t.throws(() => applyAction(r, 'advance', false, 0), { code: 'ROLLOUT_CONFLICT' });
  const paused = applyAction(r, 'pause', false, HOUR);
  t.same([paused.state, paused.pausedReason, advance(paused, 20 * HOUR)], ['paused', 'operator', paused], 'a paused schedule does not start');
  t.match(applyAction(paused, 'resume', false, 2 * HOUR), { state: 'scheduled', nextStepAtMs: 10 * HOUR }, 'resumed before its time: scheduled again');
  t.match(applyAction(paused, 'resume', false, 12 * HOUR), { state: 'running', percent: 5, nextStepAtMs: 13 * HOUR }, 'resumed after it: running');
  t.match(applyAction(r, 'abort', false, HOUR), { state: 'aborted' });
  t.match(replaced(r), { state: 'aborted', rollback: false }, 'a new publish aborts a scheduled rollout too');
  t.match(applyAction(r, 'complete', false, HOUR), { state: 'complete', percent: 100, stable: T });
  t.same(decodeRollout(JSON.parse(JSON.stringify(encodeRollout(r))), T.hash), r, 'a schedule survives the state file');
  const track = (rollout: typeof r) => ({ key: 'app', version: T.version, hash: T.hash, size: T.size, rollout }) as unknown as Parameters<typeof publishEvents>[0];
  t.same(publishEvents(track(r), 0).map((e) => e.type), ['updater.track.published', 'updater.rollout.scheduled'], 'a scheduled publish is its own webhook event');
  t.same(publishEvents(track(started), 0).map((e) => e.type), ['updater.track.published', 'updater.rollout.started']);
  const past = startRollout(plan, T, basis, 11 * HOUR);
  t.equal(past.state, 'running', 'a start time in the past starts at once');
});

t.test('steps advance only inside the window (in its zone; device time steps in UTC)', async (t) => {
  const plan = parseRolloutPlan({ steps: [5, 50, 100], step_interval: '1h', window: { days: ['fri'], start: '02:00', end: '04:00', tz: 'Europe/Berlin' } });
  let r = startRollout(plan, T, basis, FRIDAY);
  // Due at 01:00 UTC = 02:00 Berlin: inside.
  r = advance(r, FRIDAY + HOUR);
  t.equal(r.percent, 50);
  t.equal(advance(r, FRIDAY + 3 * HOUR), r, 'due at 03:00 UTC = 04:00 Berlin: outside, so it waits');
  t.equal(rolloutView(r, FRIDAY + 3 * HOUR).next_step_at, (FRIDAY + 7 * 24 * HOUR + HOUR) / 1000, 'and says when it will move: next Friday 02:00 Berlin');
  t.equal(advance(r, FRIDAY + 7 * 24 * HOUR + HOUR).state, 'complete', 'which it does then');
  const device = parseRolloutPlan({ steps: [5, 100], step_interval: '1h', window: { start: '02:00', end: '04:00', tz: 'device' } });
  const d = startRollout(device, T, basis, FRIDAY);
  t.equal(advance(d, FRIDAY + HOUR), d, '01:00 UTC is outside 02:00–04:00 read in UTC');
  t.equal(advance(d, FRIDAY + 2 * HOUR).state, 'complete', '02:00 UTC is inside');
});

t.test('a step event names the group reached', async (t) => {
  const plan = parseRolloutPlan({ steps: [5, { group: 'lab' }, 100], step_interval: 'manual' });
  const r = startRollout(plan, T, basis, 0);
  const next = applyAction(r, 'advance', false, 1);
  t.match(rolloutEvent('app', r, next, 1), { type: 'updater.rollout.step', data: { artifact: 'app', group: 'lab', rollout: { step: 1, percent: 5 } } });
  const scheduled = startRollout(parseRolloutPlan({ steps: [100], start_at: 100 }), T, basis, 0);
  t.equal(scheduled.state, 'scheduled');
  t.equal(advance(scheduled, 100_000).state, 'complete', 'a scheduled single step of 100 completes when it starts');
});

t.test('a state file from before targeting reads with its step', async (t) => {
  const old = { ...encodeRollout(startRollout(parseRolloutPlan({ steps: [10, 50, 100] }), T, basis, 0)), percent: 50 } as Record<string, unknown>;
  delete old.step;
  t.equal(decodeRollout(old, T.hash).step, 1);
});
