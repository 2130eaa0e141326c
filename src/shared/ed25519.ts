import { createPrivateKey, createPublicKey, randomBytes, sign, verify, type KeyObject } from 'node:crypto';

// Ed25519 (RFC 8032) for the keys the server, the tools and the agent hold raw: a 32-byte seed
// (the private key) and a 32-byte public key. OpenSSL does the work, through node:crypto:
// - it is native: a JavaScript Ed25519 spends tens of ms building its tables the first time a
//   process or thread signs or verifies (each actor thread, each agent start), then about a
//   millisecond a signature; OpenSSL spends a tenth of that and builds nothing;
// - it verifies strictly (RFC 8032, 5.1.7): an S at or above the group order, or a key or R
//   that is not a canonical encoding, is refused, so a signature cannot be reworked into a
//   second form that also verifies.
// Signatures are deterministic, so a seed signs a message to the same 64 bytes anywhere.

/** DER of an Ed25519 PKCS#8 PrivateKeyInfo (RFC 8410) up to the seed, which follows. */
const PKCS8_SEED_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
/** DER of an Ed25519 SubjectPublicKeyInfo up to the raw key, which follows. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const KEY_BYTES = 32;
const SIGNATURE_BYTES = 64;

/** A seed's key object, made once per seed object: a signing key signs many manifests. */
const privateKeys = new WeakMap<Uint8Array, KeyObject>();

/** The seed as node:crypto's private key object (what a key file is exported from). */
export function privateKeyOf(seed: Uint8Array): KeyObject {
  let key = privateKeys.get(seed);
  if (!key) {
    if (seed.length !== KEY_BYTES) throw new TypeError(`an Ed25519 seed is ${KEY_BYTES} bytes, not ${seed.length}`);
    key = createPrivateKey({ key: Buffer.concat([PKCS8_SEED_PREFIX, seed]), format: 'der', type: 'pkcs8' });
    privateKeys.set(seed, key);
  }
  return key;
}

/** A new private key: 32 random bytes. */
export function randomSeed(): Uint8Array {
  return new Uint8Array(randomBytes(KEY_BYTES));
}

/** The public key of a seed, 32 bytes. */
export function publicKeyOf(seed: Uint8Array): Uint8Array {
  const spki = createPublicKey(privateKeyOf(seed)).export({ format: 'der', type: 'spki' });
  return new Uint8Array(spki.subarray(SPKI_PREFIX.length));
}

/** The 64-byte signature of `message` by `seed`. */
export function signEd25519(message: Uint8Array, seed: Uint8Array): Uint8Array {
  return new Uint8Array(sign(null, message, privateKeyOf(seed)));
}

/** Whether `signature` is `publicKey`'s over `message`; false for anything malformed, never a throw. */
export function verifyEd25519(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  if (signature.length !== SIGNATURE_BYTES || publicKey.length !== KEY_BYTES) return false;
  try {
    const key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' });
    return verify(null, message, key, signature);
  } catch {
    // Not a point on the curve: no signature verifies with it.
    return false;
  }
}
