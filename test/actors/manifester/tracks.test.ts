import t from 'tap';
import { TrackTable, type PublishedTarget } from '../../../src/actors/manifester/tracks.js';

const hash = (c: string) => c.repeat(64);
const target = (c: string, version = c): PublishedTarget => ({
  key: 'app', name: 'app', os: '', arch: '', version, hash: hash(c), size: 1, source: 'config', binary: `/srv/${c}.bin`,
});

t.test('publishing a new target pushes the old one into history, newest first, bounded by the depth', async (t) => {
  const table = new TrackTable();
  t.same(table.publish(target('a'), 2).track.history, [], 'the first target has no history');
  t.same(table.publish(target('b'), 2).track.history, [hash('a')]);
  t.same(table.publish(target('c'), 2).track.history, [hash('b'), hash('a')]);
  t.same(table.publish(target('d'), 2).track.history, [hash('c'), hash('b')], 'the oldest falls off at the depth');
});

t.test('going back to an earlier target removes it from history instead of listing it twice', async (t) => {
  const table = new TrackTable();
  table.publish(target('a'), 3);
  table.publish(target('b'), 3);
  const back = table.publish(target('a'), 3);
  t.ok(back.changed);
  t.same(back.track.history, [hash('b')], 'the current target is never its own delta source');
});

t.test('the same bytes again change only the labels and keep the history', async (t) => {
  const table = new TrackTable();
  table.publish(target('a'), 3);
  table.publish(target('b'), 3);
  const same = table.publish({ ...target('b', '2.0.1'), source: 'api' }, 3);
  t.notOk(same.changed, 'not a change: no new manifest, no new delta');
  t.equal(same.track.version, '2.0.1');
  t.equal(same.track.source, 'api');
  t.same(same.track.history, [hash('a')]);
});

t.test('a history depth of 0 keeps no delta sources', async (t) => {
  const table = new TrackTable();
  table.publish(target('a'), 0);
  t.same(table.publish(target('b'), 0).track.history, []);
});
