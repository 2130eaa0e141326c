import t from 'tap';
import { LoadStats } from '../../src/load/stats.js';

t.test('latency percentiles come from the histogram to three significant digits', async (t) => {
  const stats = new LoadStats();
  t.same(stats.percentiles(), { p50: 0, p99: 0, p999: 0, max: 0 }, 'nothing recorded yet');
  // 1 ms to 1000 ms, one sample each.
  for (let ms = 1; ms <= 1000; ms++) stats.recordLatency(ms);
  const p = stats.percentiles();
  t.ok(Math.abs(p.p50 - 500) <= 1, `p50 ${p.p50}`);
  t.ok(Math.abs(p.p99 - 990) <= 1, `p99 ${p.p99}`);
  t.ok(Math.abs(p.p999 - 999) <= 1, `p999 ${p.p999}`);
  t.ok(Math.abs(p.max - 1000) <= 1, `max ${p.max}`);
});

t.test('sub-millisecond latencies keep their resolution', async (t) => {
  const stats = new LoadStats();
  for (let i = 0; i < 100; i++) stats.recordLatency(0.25);
  t.ok(Math.abs(stats.percentiles().p50 - 0.25) < 0.001);
});
