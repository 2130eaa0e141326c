import { randomBytes } from 'node:crypto';
import { constants as fsc } from 'node:fs';
import { link, open, readdir, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { UpdaterError, isUpdaterError } from './errors.js';

// Crash-safe files: write a temporary in the same directory, fsync it, move it into place,
// fsync the directory. A crash leaves either nothing or a temporary that startup removes;
// a reader never sees half a file under its final name.

export const TEMP_PREFIX = '.tmp-';

export function tempPathFor(dir: string): string {
  return join(dir, `${TEMP_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`);
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, fsc.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Publishes a finished temporary under `finalPath` without ever overwriting: a hard link
 * fails with EEXIST when the name is taken (content-addressed, so the existing file is the
 * same bytes). Returns false when the name already existed.
 */
export async function publishNoOverwrite(tempPath: string, finalPath: string, options: { keepTemp?: boolean } = {}): Promise<boolean> {
  let created = true;
  try {
    await link(tempPath, finalPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    created = false;
  }
  // keepTemp: the caller checks the existing file first and may link again.
  if (!options.keepTemp) await unlink(tempPath);
  await fsyncDir(dirname(finalPath));
  return created;
}

/**
 * Writes all of `data` at the handle's position. `FileHandle.write` reports how much it wrote
 * and may write less (a disk that fills mid-write gives a short write before ENOSPC); a caller
 * that ignores `bytesWritten` stores a truncated file. Loops until done or the system errs.
 */
export async function writeFully(handle: FileHandle, data: Uint8Array, position: number | null = null): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const at = position === null ? null : position + offset;
    const { bytesWritten } = await handle.write(data, offset, data.length - offset, at);
    if (bytesWritten <= 0) {
      // write(2) returns 0 without an error only when nothing more fits: a full disk.
      throw Object.assign(new Error('the file system accepted no more bytes'), { code: 'ENOSPC' });
    }
    offset += bytesWritten;
  }
}

/**
 * Maps a file-system failure of a write to the registry's stable codes: a full disk or quota
 * is STORE_FULL (507), a read-only mount STORE_READ_ONLY (503); anything else is returned as is.
 */
export function storeWriteError(err: unknown, what: string): unknown {
  if (isUpdaterError(err)) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return new UpdaterError('STORE_FULL', `no space left to write ${what}`, { errno: code });
  if (code === 'EROFS') return new UpdaterError('STORE_READ_ONLY', `the file system is read-only; cannot write ${what}`, { errno: code });
  return err;
}

/** Replaces `finalPath` atomically (for state files, which are meant to change). */
export async function replaceFileDurably(finalPath: string, data: string | Uint8Array): Promise<void> {
  const dir = dirname(finalPath);
  const temp = tempPathFor(dir);
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  await handle.close();
  await rename(temp, finalPath);
  await fsyncDir(dir);
}

/** Opens a new temporary for streaming writes; the caller syncs, closes and publishes it. */
export async function openTemp(dir: string): Promise<{ path: string; handle: FileHandle }> {
  const path = tempPathFor(dir);
  return { path, handle: await open(path, 'wx', 0o644) };
}

/**
 * Removes the temporaries a crash left behind. Returns how many were removed. With
 * `minAgeMs`, only those not modified for that long (a shared directory: others write too).
 */
export async function removeLeftoverTemps(dir: string, minAgeMs = 0): Promise<number> {
  let removed = 0;
  for (const name of await readdir(dir)) {
    if (!name.startsWith(TEMP_PREFIX)) continue;
    const path = join(dir, name);
    if (minAgeMs > 0) {
      const modified = await stat(path).then((s) => s.mtimeMs, () => Date.now());
      if (Date.now() - modified < minAgeMs) continue;
    }
    await unlink(path).catch(() => undefined);
    removed++;
  }
  return removed;
}
