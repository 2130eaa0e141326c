import t from 'tap';
import { backoffDelay, retryDelay } from '../../agent/backoff.js';

const policy = { retryBaseMs: 1000, retryMaxMs: 60_000, diskFullBackoffMs: 300_000 };

t.test('backoff doubles per failure, is capped, and jitters within the upper half', async (t) => {
  t.equal(backoffDelay(0, 1000, 60_000), 0, 'no failure, no wait');
  t.equal(backoffDelay(1, 1000, 60_000, () => 1), 1000);
  t.equal(backoffDelay(3, 1000, 60_000, () => 1), 4000);
  t.equal(backoffDelay(3, 1000, 60_000, () => 0), 2000, 'jitter never goes below half');
  t.equal(backoffDelay(30, 1000, 60_000, () => 1), 60_000, 'capped at retry_max');
  t.equal(backoffDelay(5000, 1000, 60_000, () => 1), 60_000, 'a long outage does not overflow');
  const seen = new Set(Array.from({ length: 20 }, () => backoffDelay(4, 1000, 60_000)));
  t.ok(seen.size > 1, 'two devices failing together wait different times');
});

t.test('a full disk puts a 5-minute floor under the backoff', async (t) => {
  t.equal(retryDelay(1, true, policy, () => 0), 300_000);
  t.equal(retryDelay(1, false, policy, () => 0), 500);
  t.equal(retryDelay(40, true, { ...policy, retryMaxMs: 3_600_000 }, () => 1), 3_600_000, 'a longer backoff is kept');
});
