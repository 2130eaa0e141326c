import t from 'tap';
import { ReportLimiter } from '../../src/shared/report-limit.js';

// The per-device token bucket of update reports, on an injected clock.

t.test('a device gets its burst, then one report per refill interval; others are not held', async (t) => {
  const limit = new ReportLimiter({ burst: 3, perMinute: 6 });
  t.same([0, 0, 0].map((at) => limit.take('a', at)), [0, 0, 0], 'the burst is let through');
  t.equal(limit.take('a', 0), 10_000, 'the next waits for one refill (6 a minute: 10 s)');
  t.equal(limit.take('a', 4_000), 6_000, 'a refused report takes nothing: the wait only shrinks');
  t.equal(limit.take('b', 4_000), 0, 'another device has its own bucket');
  t.equal(limit.take('a', 10_000), 0, 'one report after one refill');
  t.ok(limit.take('a', 10_000) > 0, 'and no second');
  t.same([0, 0, 0].map(() => limit.take('a', 10_000 + 10 * 60_000)), [0, 0, 0], 'an idle bucket fills up to the burst, no more');
  t.ok(limit.take('a', 10_000 + 10 * 60_000) > 0);
});

t.test('reports arriving out of order by a few milliseconds do not refill the bucket', async (t) => {
  const limit = new ReportLimiter({ burst: 1, perMinute: 1 });
  t.equal(limit.take('a', 1_000), 0);
  t.ok(limit.take('a', 990) > 0, 'an earlier time is read as no time passed');
  t.ok(limit.take('a', 1_005) > 0);
});

t.test('burst 0 turns the limit off', async (t) => {
  const limit = new ReportLimiter({ burst: 0, perMinute: 1 });
  t.ok(Array.from({ length: 100 }, () => limit.take('a', 0)).every((w) => w === 0));
});
