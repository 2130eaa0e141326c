import t from 'tap';
import { AdminAuth, TokenBucket } from '../../../../src/actors/http/admin/config-token.js';

const TOKEN = 'a-valid-admin-token-of-more-than-32-chars';

t.test('the bucket gives out its capacity, then refills at its rate', async (t) => {
  const bucket = new TokenBucket(3, 2, 0);
  t.same([bucket.take(0), bucket.take(0), bucket.take(0), bucket.take(0)], [true, true, true, false]);
  t.equal(bucket.take(499), false, 'less than one token refilled after 499 ms at 2/s');
  t.equal(bucket.take(500), true, 'one token after half a second');
  t.equal(bucket.available(60_000), 3, 'never more than the capacity');
});

t.test('only failures drain the bucket; the valid token always passes', async (t) => {
  let now = 0;
  const auth = new AdminAuth(TOKEN, 2, 1, () => now);
  t.equal(auth.check(`Bearer ${TOKEN}`), 'ok');
  t.equal(auth.check('Bearer wrong'), 'unauthorized');
  t.equal(auth.check(''), 'unauthorized', 'a missing header is a failure');
  t.equal(auth.check('Bearer wrong'), 'throttled', 'the third failure finds the bucket empty');
  const answers = new Set(Array.from({ length: 100 }, () => auth.check(`Bearer ${TOKEN}`)));
  t.same([...answers], ['ok'], 'the valid token passes 100 times while the bucket is empty');
  now += 1000;
  t.equal(auth.check('Bearer wrong'), 'unauthorized', 'one token back after a second');
  t.equal(auth.check('Bearer wrong'), 'throttled');
});

t.test('token comparison accepts only the exact token, whatever the length presented', async (t) => {
  const auth = new AdminAuth(TOKEN, 1000, 1, () => 0);
  for (const header of [
    `Bearer ${TOKEN.slice(0, -1)}`,
    `Bearer ${TOKEN}x`,
    `Bearer ${'x'.repeat(10_000)}`,
    `Basic ${TOKEN}`,
    TOKEN,
    `Bearer ${TOKEN} extra`,
    'Bearer ',
  ]) {
    t.equal(auth.check(header), 'unauthorized', `refuses ${header.slice(0, 40)}`);
  }
  t.equal(auth.check(`bearer  ${TOKEN}`), 'ok', 'the scheme is case-insensitive (RFC 9110)');
});
