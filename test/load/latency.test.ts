import t from 'tap';
import { LatencyHistogram } from '../../src/load/latency.js';

t.test('percentiles are read to within 0.1 % and histograms of several processes merge', async (t) => {
  const a = new LatencyHistogram();
  const b = new LatencyHistogram();
  // 1..1000 ms split between two "processes": odd values in one, even in the other.
  for (let ms = 1; ms <= 1000; ms++) (ms % 2 ? a : b).record(ms);
  const merged = new LatencyHistogram();
  merged.add(a.toRecord());
  merged.add(JSON.parse(JSON.stringify(b.toRecord())));
  t.equal(merged.count, 1000);
  const s = merged.summary();
  t.ok(Math.abs(s.p50 - 500) / 500 <= 0.001, `p50 ${s.p50}`);
  t.ok(Math.abs(s.p99 - 990) / 990 <= 0.001, `p99 ${s.p99}`);
  t.ok(Math.abs(s.p999 - 999) / 999 <= 0.001, `p999 ${s.p999}`);
  t.ok(Math.abs(s.max - 1000) / 1000 <= 0.001, `max ${s.max}`);
});

t.test('an empty histogram reads zeros', async (t) => {
  t.same(new LatencyHistogram().summary(), { count: 0, p50: 0, p99: 0, p999: 0, max: 0 });
});
