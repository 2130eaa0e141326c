import { createHash } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
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
/** Read buffers kept for the next hash on this thread (more run at once only while publishing). */
const SPARE_BUFFERS = 2;
const spare: Buffer[] = [];

/**
 * SHA-256 and size of a file, read through a 1 MiB buffer that the thread's next hash reuses.
 * A read stream would allocate a fresh buffer per chunk, and a fresh buffer per hash is no
 * better: V8 frees such buffers only at a full collection, which a quiet thread runs rarely, so
 * they piled up outside the heap (docs/memory.md, "Dead buffers").
 */
export async function sha256File(path: string): Promise<{ hash: string; size: number }> {
  const handle = await open(path, 'r');
  try {
    return await sha256Handle(handle);
  } finally {
    await handle.close();
  }
}

/**
 * SHA-256 and size of an open file, read from its first byte whatever was read before (the
 * store reads a descriptor it has checked twice: to hash, then to copy). `each` gets every
 * chunk before the next is read (the buffer is reused).
 */
export async function sha256Handle(handle: FileHandle, each?: (chunk: Buffer) => Promise<void>): Promise<{ hash: string; size: number }> {
  const buffer = spare.pop() ?? Buffer.allocUnsafeSlow(READ_BYTES);
  try {
    const hasher = createHash('sha256');
    let size = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, READ_BYTES, size);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      hasher.update(chunk);
      size += bytesRead;
      if (each) await each(chunk);
    }
    return { hash: hasher.digest('hex'), size };
  } finally {
    if (spare.length < SPARE_BUFFERS) spare.push(buffer);
  }
}
