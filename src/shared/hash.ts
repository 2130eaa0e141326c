import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
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

/** Hashes a file by streaming it, so a large binary is never held in memory. */
export async function sha256File(path: string): Promise<{ hash: string; size: number }> {
  const hasher = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    hasher.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { hash: hasher.digest('hex'), size };
}
