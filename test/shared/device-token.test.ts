import { createHash, createHmac } from 'node:crypto';
import t from 'tap';
import { TokenChecker, TokenRefused, deviceIdHash, mintDeviceToken } from '../../src/shared/device-token.js';

// The token's MAC is written out by hand for speed (two one-shot hashes instead of createHmac):
// these check that it is still HMAC-SHA256 as docs/protocol.md states, so a token minted by one
// release is good on the next, and that the hand-written path refuses every altered byte.

const KEY = new Uint8Array(32).map((_, i) => i * 7 + 1);
const NOW = 1_800_000_000;

function tokenBytes(token: string): Buffer {
  return Buffer.from(token.slice('d1.'.length), 'base64url');
}

function checkerWith(key: Uint8Array): TokenChecker {
  const checker = new TokenChecker();
  checker.update({ version: '1', key, revoked: [], certificatesRefused: [] });
  return checker;
}

function refusal(fn: () => void): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (err instanceof TokenRefused) return err.reason;
    throw err;
  }
}

t.test('the MAC is HMAC-SHA256 over the context and the body, as createHmac computes it', async (t) => {
  for (const key of [KEY, new Uint8Array(64).fill(9), new Uint8Array(100).fill(3)]) {
    const token = mintDeviceToken(key, 'dev-0001', NOW, 86_400);
    const bytes = tokenBytes(token);
    const expected = createHmac('sha256', key).update('updater-device-token:v1').update(bytes.subarray(0, 24)).digest().subarray(0, 16);
    t.same(bytes.subarray(24), expected, `a ${key.length}-byte key`);
  }
  t.equal(deviceIdHash('dev-0001'), createHash('sha256').update('dev-0001').digest().subarray(0, 16).toString('hex'), 'the id hash is the first 16 bytes of SHA-256');
  t.equal(deviceIdHash('pompe-à-chaleur'), createHash('sha256').update('pompe-à-chaleur', 'utf8').digest().subarray(0, 16).toString('hex'), 'over the UTF-8 of the id');
});

t.test('a minted token passes, many times and for many devices (the MAC buffers are reused)', async (t) => {
  const checker = checkerWith(KEY);
  const tokens = Array.from({ length: 50 }, (_, n) => [`dev-${n}`, mintDeviceToken(KEY, `dev-${n}`, NOW, 3600)] as const);
  for (let round = 0; round < 2; round++) {
    for (const [id, token] of tokens) checker.check(token, id, NOW + 1);
  }
  t.pass('all 100 checks passed');
});

t.test('an attacker who alters any byte of a token, or mints with another key, is refused', async (t) => {
  const token = mintDeviceToken(KEY, 'dev-0001', NOW, 3600);
  const bytes = tokenBytes(token);
  const altered: string[] = [];
  for (let i = 0; i < bytes.length; i++) {
    const copy = Buffer.from(bytes);
    copy[i]! ^= 0x01;
    // A fresh checker each time: no cache entry from an earlier check can answer for it.
    const reason = refusal(() => checkerWith(KEY).check(`d1.${copy.toString('base64url')}`, undefined, NOW + 1));
    if (reason !== 'invalid') altered.push(`byte ${i}: ${reason ?? 'accepted'}`);
  }
  t.same(altered, [], 'each of the 40 bytes, flipped, makes the token invalid');
  t.equal(refusal(() => checkerWith(KEY).check(mintDeviceToken(new Uint8Array(32).fill(7), 'dev-0001', NOW, 3600), 'dev-0001', NOW + 1)), 'invalid', 'another key: invalid');
  const checker = checkerWith(KEY);
  checker.check(token, 'dev-0001', NOW + 1);
  t.equal(refusal(() => checker.check(token, 'dev-0002', NOW + 1)), 'mismatch', 'a good token under another device id: mismatch, even once cached');
  t.equal(refusal(() => checker.check(token, 'dev-0001', NOW + 3600)), 'expired', 'at its expiry: expired');
});
