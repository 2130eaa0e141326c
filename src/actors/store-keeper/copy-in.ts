import { rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { BinaryInfo } from '../../messages/store.js';
import { openTemp, publishNoOverwrite, writeFully } from '../../shared/durable-file.js';
import { UpdaterError } from '../../shared/errors.js';
import { sha256File, sha256Handle } from '../../shared/hash.js';
import type { Logger } from '../../shared/logger.js';
import { binaryName } from '../../shared/store-layout.js';
import { openVerified, type SourceFile } from './source-file.js';
import { binaryMismatch, quarantine } from './verify.js';

/** Runs a write to the store under the store's writability rules. */
export type StoreWrite = <T>(write: () => Promise<T>) => Promise<T>;

/**
 * Streams a server-side file into `binariesDir` as `{hash}.bin` through one descriptor, opened
 * and checked first (source-file.ts): hash it (the common case at boot is a binary the store
 * already holds), then copy while hashing again, so a file that changes while it is read is
 * refused instead of stored under a wrong name. The temporary is read back and hashed once
 * synced: only bytes that are on disk and fit the name get it.
 */
export async function copyIntoStore(source: SourceFile, binariesDir: string, has: (hash: string) => boolean, writing: StoreWrite, log: Logger): Promise<BinaryInfo & { created: boolean }> {
  const handle = await openVerified(source);
  try {
    const first = await readable(() => sha256Handle(handle), source.path);
    if (has(first.hash)) return { ...first, created: false };
    return await writing(async () => {
      const tempPath = await copyToTemp(handle, source.path, binariesDir, first);
      const finalPath = join(binariesDir, binaryName(first.hash));
      let created = await publishNoOverwrite(tempPath, finalPath, { keepTemp: true });
      if (!created) {
        // The name is taken but the index did not hold it: a leftover of a crash or another hand.
        // Content-addressed names are trusted only once the bytes fit them.
        const mismatch = await binaryMismatch(finalPath, first.hash);
        if (mismatch) {
          await quarantine(dirname(binariesDir), binariesDir, binaryName(first.hash), mismatch, log);
          created = await publishNoOverwrite(tempPath, finalPath, { keepTemp: true });
        }
      }
      await rm(tempPath, { force: true });
      return { ...first, created };
    });
  } finally {
    await handle.close();
  }
}

async function copyToTemp(source: FileHandle, sourcePath: string, dir: string, expected: BinaryInfo): Promise<string> {
  const { path: tempPath, handle } = await openTemp(dir);
  try {
    let copied: BinaryInfo;
    try {
      copied = await readable(() => sha256Handle(source, (chunk) => writeFully(handle, chunk)), sourcePath);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (copied.hash !== expected.hash || copied.size !== expected.size) {
      throw new UpdaterError('SOURCE_UNREADABLE', `${sourcePath} changed while it was being read; try again once it is complete`);
    }
    const written = await sha256File(tempPath);
    if (written.hash !== expected.hash || written.size !== expected.size) {
      throw new UpdaterError('STORE_CORRUPT', `the copy of ${sourcePath} reads back as ${written.size} bytes hashing to ${written.hash}, not what was written`);
    }
    return tempPath;
  } catch (err) {
    await rm(tempPath, { force: true });
    throw err;
  }
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
