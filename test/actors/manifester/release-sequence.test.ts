import t from 'tap';
import { nextSequence, publishedSequences, stableSequenceOf, steppedSequences } from '../../../src/actors/manifester/release-sequence.js';
import { TrackTable, type PublishedTarget, type Track } from '../../../src/actors/manifester/tracks.js';
import { applyAction, startRollout, successorBasis } from '../../../src/actors/manifester/rollout/rollout.js';
import { parseRolloutPlan } from '../../../src/shared/rollout-plan.js';

// The sequence rules of release statements, without threads: what each change of a track does
// to the sequence of its target and of its rollout's stable target.

const hash = (c: string) => c.repeat(64);
const T0 = 1_790_000_000_000;
const plan = parseRolloutPlan({ steps: [10, 50, 100], step_interval: '1h', max_failure_rate: 0.5, min_reports: 10 });
const target = (c: string): PublishedTarget => ({ key: 'app', name: 'app', os: '', arch: '', version: c, hash: hash(c), size: 1, source: 'api', binary: `/srv/${c}` });

t.test('each publish of new bytes raises the sequence; the same bytes under a new label keep it', async (t) => {
  const table = new TrackTable();
  const a = table.publish(target('a'), 3, T0).track;
  t.equal(a.sequence, T0 / 1000, 'the first publish is numbered by its second');
  const b = table.publish(target('b'), 3, T0).track;
  t.equal(b.sequence, a.sequence + 1, 'two publishes in one second still rise');
  const relabelled = table.publish({ ...target('b'), version: 'b2' }, 3, T0 + 5000).track;
  t.equal(relabelled.sequence, b.sequence, 'a new label is not a new release');
  const back = table.publish(target('a'), 3, T0 + 10_000).track;
  t.ok(back.sequence > b.sequence, 'an operator rollback (older bytes published again) gets a higher sequence');
});

t.test('the sequence never falls, even when the clock goes back', async (t) => {
  const previous = { sequence: 2_000_000_000 };
  t.equal(nextSequence(previous, T0), 2_000_000_001);
});

t.test('a rollout: the stable target is numbered below the new target, and an abort with rollback above it', async (t) => {
  const table = new TrackTable();
  const stable = table.publish(target('s'), 3, T0).track;
  const before = table.get('app')!;
  const rollout = startRollout(plan, { hash: hash('t'), version: 't', size: 1 }, successorBasis(before), T0);
  const rolling = table.publish({ ...target('t'), rollout }, 3, T0 + 1000).track;
  t.ok(rolling.sequence > stable.sequence);
  t.equal(stableSequenceOf(rolling), stable.sequence, 'the stable target keeps its own sequence: a replay of it cannot take a device off T');
  const aborted = applyAction(rollout, 'abort', true, T0 + 2000);
  const after: Track = { ...rolling, rollout: aborted, ...steppedSequences(rolling, aborted, T0 + 2000) };
  t.ok(stableSequenceOf(after) > after.sequence, 'after a rollback the stable target is above T: devices on T install it');
  const again = steppedSequences(after, aborted, T0 + 3000);
  t.equal(again.stableSequence, stableSequenceOf(after), 'a step that is not a new rollback changes nothing');
});

t.test('a rollout replacing one under way keeps the first stable target\'s sequence', async (t) => {
  const previous = { sequence: 20, stableSequence: 10, rollout: startRollout(plan, { hash: hash('t'), version: 't', size: 1 }, { stable: { hash: hash('s'), version: 's', size: 1 }, held: [] }, T0) };
  const next = startRollout(plan, { hash: hash('u'), version: 'u', size: 1 }, successorBasis({ hash: hash('t'), version: 't', size: 1, rollout: previous.rollout }), T0);
  t.same(publishedSequences(previous, next, 0), { sequence: 21, stableSequence: 10 });
});
