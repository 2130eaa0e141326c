import { open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { UpdaterError } from '../src/shared/errors.js';

// One agent per slot directory: two agents patching the same inactive slot, or one swapping
// `current` while the other verifies it, would break every guarantee. The lock file holds
// the owner's pid; a lock whose owner is gone (a crash, kill -9) is taken over.

const LOCK_FILE = '.agent.lock';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function lockSlotDir(dir: string): Promise<() => Promise<void>> {
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, 'wx', 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      return () => unlink(path).catch(() => undefined);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new UpdaterError('AGENT_SLOT_DIR_INVALID', `cannot create ${path}: ${(err as Error).message}`);
      }
    }
    const owner = Number((await readFile(path, 'utf8').catch(() => '')).trim());
    if (Number.isSafeInteger(owner) && owner > 0 && owner !== process.pid && alive(owner)) {
      throw new UpdaterError('AGENT_SLOT_DIR_INVALID', `another agent (pid ${owner}) is running on ${dir}`);
    }
    // The owner is gone: remove its lock; if two starters race here, `wx` lets only one win.
    await unlink(path).catch(() => undefined);
  }
  throw new UpdaterError('AGENT_SLOT_DIR_INVALID', `could not take the lock ${path}`);
}
