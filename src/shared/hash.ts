import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { UpdaterError } from './errors.js';

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** A content hash as the protocol writes it: 64 lowercase hex characters. */
export function isSha256Hex(value: unknown): value is string {
  return typeof value === 'string' && SHA256_HEX.test(value);
}

export function assertSha256Hex(value: unknown, field: string): string {
  if (!isSha256Hex(value)) {
    throw new UpdaterError('INVALID_HASH', `${field} must be 64 lowercase hex characters`, { field });
  }
  return value;
}

export function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

const READ_BYTES = 1024 * 1024;

/**
 * SHA-256 and size of a file, read through one reused 1 MiB buffer. A read stream would
 * allocate a fresh buffer per chunk, and the garbage collector frees them late enough that
 * peak memory grew with the size of the file hashed (which matters most on a device).
 */
export async function sha256File(path: string): Promise<{ hash: string; size: number }> {
  const handle = await open(path, 'r');
  try {
    const hasher = createHash('sha256');
    const buffer = Buffer.allocUnsafe(READ_BYTES);
    let size = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, READ_BYTES, null);
      if (bytesRead === 0) break;
      hasher.update(buffer.subarray(0, bytesRead));
      size += bytesRead;
    }
    return { hash: hasher.digest('hex'), size };
  } finally {
    await handle.close();
  }
}
