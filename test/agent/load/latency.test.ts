import t from 'tap';
import { LatencyHistogram } from '../../../agent/load/latency.js';

t.test('percentiles are read to within 1 % and histograms of several processes merge', async (t) => {
  const a = new LatencyHistogram();
  const b = new LatencyHistogram();
  // 1..1000 ms split between two "processes": odd values in one, even in the other.
  for (let ms = 1; ms <= 1000; ms++) (ms % 2 ? a : b).record(ms);
  const merged = new LatencyHistogram();
  merged.add(a.toRecord());
  merged.add(JSON.parse(JSON.stringify(b.toRecord())));
  t.equal(merged.count, 1000);
  const s = merged.summary();
  t.ok(Math.abs(s.p50 - 500) / 500 <= 0.01, `p50 ${s.p50}`);
  t.ok(Math.abs(s.p99 - 990) / 990 <= 0.01, `p99 ${s.p99}`);
  t.ok(Math.abs(s.p999 - 999) / 999 <= 0.01, `p999 ${s.p999}`);
  t.equal(s.max, 1000);
  t.ok(s.p50 >= 500, 'a percentile is the upper bound of its bucket (never flattering)');
});

t.test('an empty histogram reads zeros; a record with a bucket out of range is refused', async (t) => {
  t.same(new LatencyHistogram().summary(), { count: 0, p50: 0, p99: 0, p999: 0, max: 0 });
  t.throws(() => new LatencyHistogram().add({ buckets: [[99_999, 1]], max: 1 }), RangeError);
});
