import { createPrivateKey } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { privateKeyOf, publicKeyOf, randomSeed, signEd25519, verifyEd25519 } from './ed25519.js';
import { UpdaterError } from './errors.js';

/** The first line of key files written before keys were PKCS#8 PEM. */
const LEGACY_KEY_FILE_HEADER = 'updater-ed25519-private-key';

/** The signed message (docs/protocol.md, "Signature"): raw(target_hash) || raw(delta_hash), 64 bytes. */
export function signedMessage(targetHash: string, transferHash: string): Uint8Array {
  return new Uint8Array(Buffer.concat([Buffer.from(targetHash, 'hex'), Buffer.from(transferHash, 'hex')]));
}

export function signManifest(privateKey: Uint8Array, targetHash: string, transferHash: string): string {
  return Buffer.from(signEd25519(signedMessage(targetHash, transferHash), privateKey)).toString('hex');
}

export function verifyManifest(publicKeyHex: string, targetHash: string, transferHash: string, signatureHex: string): boolean {
  if (!/^[0-9a-f]{128}$/.test(signatureHex) || !/^[0-9a-f]{64}$/.test(publicKeyHex)) return false;
  return verifyEd25519(Buffer.from(signatureHex, 'hex'), signedMessage(targetHash, transferHash), Buffer.from(publicKeyHex, 'hex'));
}

export function publicKeyHex(privateKey: Uint8Array): string {
  return Buffer.from(publicKeyOf(privateKey)).toString('hex');
}

/**
 * Key file: PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"), the standard form that `openssl pkey`,
 * Python's `cryptography` and every HSM import tool read. Files in the earlier format (a
 * header line, then the 32-byte seed in hex) are still read.
 */
export async function writePrivateKeyFile(path: string): Promise<string> {
  const seed = randomSeed();
  try {
    await writeFile(path, privateKeyPem(seed), { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new UpdaterError('CONFIG_INVALID', `${path} already exists; refusing to overwrite a signing key`);
    }
    throw err;
  }
  return publicKeyHex(seed);
}

/** The PKCS#8 PEM of an Ed25519 seed (RFC 8410). */
export function privateKeyPem(seed: Uint8Array): string {
  return privateKeyOf(seed).export({ format: 'pem', type: 'pkcs8' }).toString();
}

export async function readPrivateKeyFile(path: string): Promise<Uint8Array> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new UpdaterError('CONFIG_INVALID', `signing.private_key_file: cannot read ${path}: ${(err as Error).message}`);
  }
  const seed = text.trimStart().startsWith('-----BEGIN') ? seedFromPem(text) : seedFromLegacy(text);
  if (!seed) {
    throw new UpdaterError('CONFIG_INVALID', `signing.private_key_file: ${path} is not an unencrypted Ed25519 PKCS#8 PEM key (as "updater keygen" writes)`);
  }
  return seed;
}

function seedFromPem(text: string): Uint8Array | undefined {
  try {
    const key = createPrivateKey({ key: text, format: 'pem' });
    if (key.asymmetricKeyType !== 'ed25519') return undefined;
    const { d } = key.export({ format: 'jwk' });
    return d ? new Uint8Array(Buffer.from(d, 'base64url')) : undefined;
  } catch {
    // Encrypted, damaged or not a private key: the caller names the file and the format.
    return undefined;
  }
}

function seedFromLegacy(text: string): Uint8Array | undefined {
  const lines = text.trim().split(/\r?\n/);
  if (lines.length !== 2 || lines[0] !== LEGACY_KEY_FILE_HEADER || !/^[0-9a-f]{64}$/.test(lines[1] ?? '')) return undefined;
  return new Uint8Array(Buffer.from(lines[1]!, 'hex'));
}
