import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import * as ed from '@noble/ed25519';
import { UpdaterError } from './errors.js';

// @noble/ed25519 v3 needs a SHA-512 for its synchronous API; Node's is native and fast.
ed.hashes.sha512 = (message: Uint8Array) => new Uint8Array(createHash('sha512').update(message).digest());

const KEY_FILE_HEADER = 'updater-ed25519-private-key';

/** The signed message of interface.md: raw(target_hash) || raw(delta_hash), 64 bytes. */
export function signedMessage(targetHash: string, transferHash: string): Uint8Array {
  return new Uint8Array(Buffer.concat([Buffer.from(targetHash, 'hex'), Buffer.from(transferHash, 'hex')]));
}

export function signManifest(privateKey: Uint8Array, targetHash: string, transferHash: string): string {
  return Buffer.from(ed.sign(signedMessage(targetHash, transferHash), privateKey)).toString('hex');
}

export function verifyManifest(publicKeyHex: string, targetHash: string, transferHash: string, signatureHex: string): boolean {
  if (!/^[0-9a-f]{128}$/.test(signatureHex) || !/^[0-9a-f]{64}$/.test(publicKeyHex)) return false;
  try {
    return ed.verify(Buffer.from(signatureHex, 'hex'), signedMessage(targetHash, transferHash), Buffer.from(publicKeyHex, 'hex'));
  } catch {
    return false;
  }
}

export function publicKeyHex(privateKey: Uint8Array): string {
  return Buffer.from(ed.getPublicKey(privateKey)).toString('hex');
}

/** Key file: a header line then the 32-byte seed in hex, so operators can tell what it is. */
export async function writePrivateKeyFile(path: string): Promise<string> {
  const seed = ed.utils.randomSecretKey();
  const text = `${KEY_FILE_HEADER}\n${Buffer.from(seed).toString('hex')}\n`;
  try {
    await writeFile(path, text, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new UpdaterError('CONFIG_INVALID', `${path} already exists; refusing to overwrite a signing key`);
    }
    throw err;
  }
  return publicKeyHex(seed);
}

export async function readPrivateKeyFile(path: string): Promise<Uint8Array> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new UpdaterError('CONFIG_INVALID', `signing.private_key_file: cannot read ${path}: ${(err as Error).message}`);
  }
  const lines = text.trim().split(/\r?\n/);
  if (lines.length !== 2 || lines[0] !== KEY_FILE_HEADER || !/^[0-9a-f]{64}$/.test(lines[1] ?? '')) {
    throw new UpdaterError('CONFIG_INVALID', `signing.private_key_file: ${path} is not a key written by "updater keygen"`);
  }
  return new Uint8Array(Buffer.from(lines[1]!, 'hex'));
}
