import { randomBytes } from 'node:crypto';
import { constants as fsc } from 'node:fs';
import { link, open, readdir, rename, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';

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
export async function publishNoOverwrite(tempPath: string, finalPath: string): Promise<boolean> {
  let created = true;
  try {
    await link(tempPath, finalPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    created = false;
  }
  await unlink(tempPath);
  await fsyncDir(dirname(finalPath));
  return created;
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

/** Removes the temporaries a crash left behind. Returns how many were removed. */
export async function removeLeftoverTemps(dir: string): Promise<number> {
  let removed = 0;
  for (const name of await readdir(dir)) {
    if (name.startsWith(TEMP_PREFIX)) {
      await unlink(join(dir, name)).catch(() => undefined);
      removed++;
    }
  }
  return removed;
}
