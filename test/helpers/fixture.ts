import { createCipheriv, createHash, hash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publicKeyHex, readPrivateKeyFile, writePrivateKeyFile } from '../../src/shared/signing.js';

export { freePort } from './free-port.js';

// Real files in a temp directory: a signing key, an admin token, and binaries whose versions
// differ a little (so deltas are small) or a lot.

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdefghijkl';

export interface Fixture {
  readonly dir: string;
  readonly keyPath: string;
  readonly publicKey: string;
  readonly tokenPath: string;
  /** Writes a binary below the fixture and returns its path and hash. */
  writeBinary(name: string, bytes: Buffer): Promise<{ path: string; hash: string; size: number }>;
  cleanup(): Promise<void>;
}

export async function makeFixture(prefix = 'updater-test-'): Promise<Fixture> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const keyPath = join(dir, 'signing.key');
  await writePrivateKeyFile(keyPath);
  const publicKey = publicKeyHex(await readPrivateKeyFile(keyPath));
  const tokenPath = join(dir, 'admin.token');
  await writeFile(tokenPath, `${ADMIN_TOKEN}\n`);
  return {
    dir,
    keyPath,
    publicKey,
    tokenPath,
    async writeBinary(name, bytes) {
      const path = join(dir, name);
      await writeFile(path, bytes);
      return { path, hash: sha256Hex(bytes), size: bytes.length };
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Pseudo-random bytes from a seed: the same seed gives the same "firmware". */
export function firmware(size: number, seed: string): Buffer {
  const out = Buffer.allocUnsafe(size);
  let block = createHash('sha256').update(seed).digest();
  for (let offset = 0; offset < size; offset += 32) {
    // The one-shot hash: the same bytes at half the CPU of a Hash object per 32 bytes.
    block = hash('sha256', block, 'buffer');
    block.copy(out, offset, 0, Math.min(32, size - offset));
  }
  return out;
}

/**
 * Incompressible bytes from a seed, for files of many MB whose content no check reads:
 * firmware()'s hash chain costs half a second of CPU every 12 MB, AES-256-CTR over zeros a few ms.
 * Not the bytes firmware() gives for the same seed.
 */
export function noise(size: number, seed: string): Buffer {
  const key = createHash('sha256').update(seed).digest();
  return createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(size));
}

/** The next version of `base`: a few small edits and an appended tail, as a rebuild gives. */
export function nextVersion(base: Buffer, seed: string): Buffer {
  const next = Buffer.from(base);
  const noise = firmware(64, seed);
  for (let i = 0; i < 8; i++) {
    const at = Math.floor(((noise[i] ?? 0) / 256) * (next.length - 16));
    noise.copy(next, at, i * 8, i * 8 + 8);
  }
  return Buffer.concat([next, firmware(4096, `${seed}-tail`)]);
}

export function randomHash(): string {
  return randomBytes(32).toString('hex');
}

