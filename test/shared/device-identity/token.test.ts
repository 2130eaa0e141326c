import { createHash, createHmac } from 'node:crypto';
import t from 'tap';
import { TokenChecker, deviceIdHash, mintDeviceToken } from '../../../src/shared/device-identity/token.js';
import { tokenRefusal } from '../../helpers/device-auth.js';

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

t.test('a minted token passes, many times and for many devices (the decoding and MAC buffers are reused)', async (t) => {
  const checker = checkerWith(KEY);
  const tokens = Array.from({ length: 50 }, (_, n) => [`dev-${n}`, mintDeviceToken(KEY, `dev-${n}`, NOW, 3600)] as const);
  for (let round = 0; round < 2; round++) {
    for (const [id, token] of tokens) checker.requireOwner(checker.verify(token, NOW + 1), id);
  }
  t.pass('all 100 checks passed');
  const [id, token] = tokens[0]!;
  t.equal(tokenRefusal(() => checker.requireOwner(checker.verify(token, NOW + 1), 'dev-1')), 'mismatch', 'a remembered token under another device id: mismatch');
  t.equal(tokenRefusal(() => checker.requireOwner(checker.verify(token, NOW + 1), id)), undefined, 'and under its own again: valid');
});

t.test('an attacker who alters any byte of a token, or mints with another key, is refused', async (t) => {
  const token = mintDeviceToken(KEY, 'dev-0001', NOW, 3600);
  const bytes = tokenBytes(token);
  const checker = checkerWith(KEY);
  const altered: string[] = [];
  for (let i = 0; i < bytes.length; i++) {
    const copy = Buffer.from(bytes);
    copy[i]! ^= 0x01;
    const reason = tokenRefusal(() => checker.verify(`d1.${copy.toString('base64url')}`, NOW + 1));
    if (reason !== 'invalid') altered.push(`byte ${i}: ${reason ?? 'accepted'}`);
  }
  t.same(altered, [], 'each of the 40 bytes, flipped, makes the token invalid');
  t.equal(tokenRefusal(() => checker.verify(mintDeviceToken(new Uint8Array(32).fill(7), 'dev-0001', NOW, 3600), NOW + 1)), 'invalid', 'another key: invalid');
  const claims = checker.verify(token, NOW + 1);
  t.equal(tokenRefusal(() => checker.requireOwner(claims, 'dev-0002')), 'mismatch', 'a good token under another device id: mismatch');
  t.equal(tokenRefusal(() => checker.verify(token, NOW + 3600)), 'expired', 'at its expiry: expired');
  const good = token.slice(3);
  for (const [what, variant] of [['the other alphabet', good.replace(/-/g, '+').replace(/_/g, '/')], ['padding', `${good.slice(0, -2)}==`], ['a character outside the alphabet', `${good.slice(0, -1)}!`]] as const) {
    if (variant === good) continue;
    t.equal(tokenRefusal(() => checker.verify(`d1.${variant}`, NOW + 1)), 'invalid', `a non-canonical encoding (${what}): invalid`);
  }
  // The last character carries 2 bits of the 40th byte and 4 bits of nothing: setting those is
  // another string for the same bytes.
  const last = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const loose = good.slice(0, -1) + last[last.indexOf(good.at(-1)!) | 1];
  t.equal(tokenRefusal(() => checker.verify(`d1.${loose}`, NOW + 1)), 'invalid', 'the unused bits of the last character set: invalid');
});

t.test('a revocation refuses the tokens issued up to it, and only those of its device', async (t) => {
  const checker = new TokenChecker();
  checker.update({ version: '2', key: KEY, revoked: [[deviceIdHash('dev-0001'), NOW]], certificatesRefused: [] });
  t.equal(tokenRefusal(() => checker.verify(mintDeviceToken(KEY, 'dev-0001', NOW, 3600), NOW + 1)), 'revoked', 'issued at the revocation: revoked');
  t.equal(tokenRefusal(() => checker.verify(mintDeviceToken(KEY, 'dev-0001', NOW + 1, 3600), NOW + 2)), undefined, 'issued after it (the device authenticated again): valid');
  t.equal(tokenRefusal(() => checker.verify(mintDeviceToken(KEY, 'dev-0002', NOW - 10, 3600), NOW + 2)), undefined, 'another device: valid');
  const remembered = mintDeviceToken(KEY, 'dev-0003', NOW, 3600);
  checker.requireOwner(checker.verify(remembered, NOW + 1), 'dev-0003');
  checker.update({ version: '3', key: KEY, revoked: [[deviceIdHash('dev-0003'), NOW + 1]], certificatesRefused: [] });
  t.equal(tokenRefusal(() => checker.verify(remembered, NOW + 2)), 'revoked', 'a token verified before the revocation arrived: revoked all the same');
  checker.update({ version: '4', key: new Uint8Array(32).fill(7), revoked: [], certificatesRefused: [] });
  t.equal(tokenRefusal(() => checker.verify(remembered, NOW + 2)), 'invalid', 'after the key changed, a remembered token is checked afresh: invalid');
});
