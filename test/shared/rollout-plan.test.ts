import t from 'tap';
import { groupsOf, parseRolloutPlan, percentReached, planJson } from '../../src/shared/rollout-plan.js';

// The rollout object of a publish with targeting: group steps, manual steps, a start time and
// a window. Every refusal is INVALID_ROLLOUT naming the field.

t.test('group steps mix with rising percents; the plan echoes as given', async (t) => {
  const given = { steps: [{ group: 'canary' }, 5, { group: 'lab' }, 25, 100], step_interval: 'manual', start_at: 1_800_000_000, window: { days: ['sat', 'sun'], start: '22:00', end: '04:00', tz: 'device' } };
  const plan = parseRolloutPlan(given);
  t.same(plan.steps, given.steps);
  t.equal(plan.stepIntervalMs, null, 'manual: no timer');
  t.equal(plan.startAtMs, 1_800_000_000_000);
  t.same(groupsOf(plan), ['canary', 'lab']);
  t.same([0, 1, 2, 3, 4, 5].map((n) => percentReached(plan, n)), [0, 0, 5, 5, 25, 100]);
  t.same(planJson(plan), { ...given, max_failure_rate: 0.1, min_reports: 10 });
  t.same(parseRolloutPlan(planJson(plan)), plan, 'what the state file keeps reads back the same');
  t.same(planJson(parseRolloutPlan({ steps: [5, 100] })), { steps: [5, 100], step_interval: '1h', max_failure_rate: 0.1, min_reports: 10 }, 'a plan without targeting has no new keys');
});

t.test('bad plans are refused naming the field', async (t) => {
  const cases: [unknown, string][] = [
    [{ steps: [{ group: 'canary' }] }, 'rollout.steps'],
    [{ steps: [{ group: 'a b' }, 100] }, 'rollout.steps[0].group'],
    [{ steps: [{ group: 'x'.repeat(65) }, 100] }, 'rollout.steps[0].group'],
    [{ steps: [{ group: 'canary', percent: 5 }, 100] }, 'rollout.steps[0]'],
    [{ steps: [{ name: 'canary' }, 100] }, 'rollout.steps[0]'],
    [{ steps: [{ group: 'canary' }, { group: 'canary' }, 100] }, 'rollout.steps[1].group'],
    [{ steps: [25, { group: 'canary' }, 5, 100] }, 'rollout.steps'],
    [{ steps: [[5], 100] }, 'rollout.steps[0]'],
    [{ steps: [5, 100], step_interval: 'by hand' }, 'rollout.step_interval'],
    [{ steps: [5, 100], start_at: 1_800_000_000_000_000 }, 'rollout.start_at'],
    [{ steps: [5, 100], start_at: '2027-01-01' }, 'rollout.start_at'],
    [{ steps: [5, 100], start_at: 1.5 }, 'rollout.start_at'],
    [{ steps: [5, 100], window: { start: '02:00', end: '02:00', tz: 'UTC' } }, 'rollout.window.end'],
    [{ steps: [5, 100], window: { start: '02:00', end: '04:00', tz: 'Mars/Olympus' } }, 'rollout.window.tz'],
    [{ steps: [5, 100], window: 'nights' }, 'rollout.window'],
  ];
  for (const [value, field] of cases) t.throws(() => parseRolloutPlan(value), { code: 'INVALID_ROLLOUT', details: { field } }, JSON.stringify(value));
});
