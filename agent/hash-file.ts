import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';

const READ_BYTES = 1024 * 1024;

/**
 * SHA-256 and size of a file, read through one reused 1 MiB buffer. A read stream would
 * allocate a fresh buffer per chunk, and the garbage collector frees them late enough that
 * the device's peak memory grew with the size of the file hashed.
 */
export async function hashFile(path: string): Promise<{ hash: string; size: number }> {
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
