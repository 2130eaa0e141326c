import t from 'tap';
import { publicKeyOf, randomSeed, signEd25519, verifyEd25519 } from '../../src/shared/ed25519.js';

// The Ed25519 every signature of the service goes through (src/shared/ed25519.ts): RFC 8032's
// own test vectors, and the forms of a signature an attacker might rework one into.

const hex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'hex'));
const toHex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

// RFC 8032, 7.1: TEST 1 (the empty message) and TEST 3 (two bytes).
const VECTORS = [
  {
    seed: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
    publicKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
    message: '',
    signature: 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
  },
  {
    seed: 'c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7',
    publicKey: 'fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025',
    message: 'af82',
    signature: '6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a',
  },
];

t.test("RFC 8032's vectors: the public key, the signature, and its check", async (t) => {
  for (const v of VECTORS) {
    t.equal(toHex(publicKeyOf(hex(v.seed))), v.publicKey);
    t.equal(toHex(signEd25519(hex(v.message), hex(v.seed))), v.signature);
    t.ok(verifyEd25519(hex(v.signature), hex(v.message), hex(v.publicKey)));
  }
});

t.test('a fresh seed signs what its public key verifies, and nothing else', async (t) => {
  const seed = randomSeed();
  t.equal(seed.length, 32);
  const message = new TextEncoder().encode('updater-release:v1\napp');
  const signature = signEd25519(message, seed);
  t.ok(verifyEd25519(signature, message, publicKeyOf(seed)));
  t.notOk(verifyEd25519(signature, new TextEncoder().encode('updater-release:v1\napq'), publicKeyOf(seed)), 'another message');
  t.notOk(verifyEd25519(signature, message, publicKeyOf(randomSeed())), 'another key');
  t.notSame(toHex(randomSeed()), toHex(seed), 'seeds are random');
});

t.test('a reworked or malformed signature or key is refused, never thrown', async (t) => {
  const v = VECTORS[1]!;
  const signature = hex(v.signature);
  const message = hex(v.message);
  const publicKey = hex(v.publicKey);
  // S + L: the same signature in a second encoding, which a lax check accepts (malleability).
  const L = (1n << 252n) + 27742317777372353535851937790883648493n;
  const s = BigInt(`0x${Buffer.from(signature.subarray(32)).reverse().toString('hex')}`);
  const reworked = new Uint8Array(signature);
  reworked.set(Buffer.from((s + L).toString(16).padStart(64, '0'), 'hex').reverse(), 32);
  t.notOk(verifyEd25519(reworked, message, publicKey), 'S + L');
  const flipped = new Uint8Array(signature);
  flipped[5]! ^= 1;
  t.notOk(verifyEd25519(flipped, message, publicKey), 'one bit of R');
  t.notOk(verifyEd25519(signature.subarray(0, 63), message, publicKey), 'a byte short');
  t.notOk(verifyEd25519(signature, message, publicKey.subarray(0, 31)), 'a key a byte short');
  t.notOk(verifyEd25519(new Uint8Array(64), message, publicKey), 'zeros');
  // y = 2 is not on the curve: no point decodes from it.
  const offCurve = new Uint8Array(32);
  offCurve[0] = 2;
  t.notOk(verifyEd25519(signature, message, offCurve), 'a key off the curve');
  t.throws(() => signEd25519(message, new Uint8Array(31)), /32 bytes/, 'a seed of the wrong length');
});
