import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { BinaryInfo } from '../../messages/store.js';
import { openTemp, publishNoOverwrite } from '../../shared/durable-file.js';
import { UpdaterError } from '../../shared/errors.js';
import { sha256File } from '../../shared/hash.js';
import { binaryName } from '../../shared/store-layout.js';

/**
 * Streams a server-side file into `binariesDir` as `{hash}.bin`: hash first (the common case
 * at boot is a binary the store already holds), then copy while hashing again, so a file that
 * changes while it is read is refused instead of stored under a wrong name.
 */
export async function copyIntoStore(sourcePath: string, binariesDir: string, has: (hash: string) => boolean): Promise<BinaryInfo & { created: boolean }> {
  const first = await readable(() => sha256File(sourcePath), sourcePath);
  if (has(first.hash)) return { ...first, created: false };

  const { path: tempPath, handle } = await openTemp(binariesDir);
  const hasher = createHash('sha256');
  let size = 0;
  try {
    await readable(async () => {
      for await (const chunk of createReadStream(sourcePath, { highWaterMark: 1 << 20 })) {
        hasher.update(chunk as Buffer);
        size += (chunk as Buffer).length;
        await handle.write(chunk as Buffer);
      }
    }, sourcePath);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await rm(tempPath, { force: true });
    throw err;
  }
  await handle.close();
  const hash = hasher.digest('hex');
  if (hash !== first.hash || size !== first.size) {
    await rm(tempPath, { force: true });
    throw new UpdaterError('SOURCE_UNREADABLE', `${sourcePath} changed while it was being read; try again once it is complete`);
  }
  const created = await publishNoOverwrite(tempPath, join(binariesDir, binaryName(hash)));
  return { hash, size, created };
}

async function readable<T>(read: () => Promise<T>, path: string): Promise<T> {
  try {
    return await read();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR' || code === 'EPERM') {
      throw new UpdaterError('SOURCE_UNREADABLE', `cannot read ${path}: ${code}`, { path });
    }
    throw err;
  }
}
