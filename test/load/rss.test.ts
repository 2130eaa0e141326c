import t from 'tap';
import { judgeSoak, rssFloorGrowthPerMinute, rssSlopePerMinute } from '../../src/load/rss.js';

const MB = 1024 * 1024;
const series = (seconds: number, at: (s: number) => number) => Array.from({ length: seconds }, (_, s) => ({ atSeconds: s, bytes: at(s) }));

t.test('RSS slope and the soak verdict', async (t) => {
  t.equal(Math.round(rssSlopePerMinute(series(60, (s) => 100 * MB + s * MB)) / MB), 60, '1 MB a second is 60 MB a minute');
  t.equal(rssSlopePerMinute(series(60, () => 100 * MB)), 0);

  const flat = judgeSoak(series(120, (s) => (s < 30 ? 100 + s : 130) * MB + (s % 2) * MB), 200 * MB, 2 * MB);
  t.ok(flat.ok, 'growth during warm-up then flat passes');
  const leaking = judgeSoak(series(120, (s) => (100 + s * 0.2) * MB), 200 * MB, 2 * MB);
  t.notOk(leaking.ok, '12 MB a minute after warm-up fails');
  t.match(leaking.reasons.join(), /keeps growing/);
  const over = judgeSoak(series(120, () => 250 * MB), 200 * MB, 2 * MB);
  t.notOk(over.ok);
  t.match(over.reasons.join(), /over the bound/);
  // A heap that grows for 80 s then gives it back: its regression slope is steep, its floor flat.
  const breathing = series(240, (s) => (s < 30 ? 200 : 240 + ((s - 30) % 80) * 0.15) * MB);
  t.ok(rssSlopePerMinute(breathing.slice(30, 110)) > 4 * MB, 'a regression over part of a sawtooth looks like growth');
  t.ok(Math.abs(rssFloorGrowthPerMinute(breathing.slice(30))) < 1 * MB, 'the floor shows it is not');
  t.ok(judgeSoak(breathing, 300 * MB, 2 * MB).ok, 'so the soak passes');
  const short = judgeSoak(series(20, () => 100 * MB), 200 * MB, 2 * MB);
  t.notOk(short.ok, 'a run too short to judge is not a pass');
});
