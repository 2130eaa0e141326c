import { execFileSync } from 'node:child_process';
import { statfsSync } from 'node:fs';
import { mkdir, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Test } from 'tap';

// A small tmpfs for disk-full and read-only faults. Tests run as root (CI does); the mount
// is always undone in teardown, failure or not.

export interface SmallDisk {
  readonly dir: string;
  free(): number;
  /** Writes a filler file so that about `leaveBytes` stay free. */
  fillLeaving(leaveBytes: number): Promise<void>;
  /** Removes the filler. */
  unfill(): Promise<void>;
  readOnly(on: boolean): void;
}

export const canMount = typeof process.getuid === 'function' && process.getuid() === 0;

export async function mountSmallDisk(t: Test, dir: string, sizeMb = 12): Promise<SmallDisk> {
  await mkdir(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', dir]);
  t.teardown(() => {
    // Lazy: a server that is still closing files does not keep the mount behind.
    execFileSync('umount', ['-l', dir]);
  });
  const filler = join(dir, 'filler');
  const disk: SmallDisk = {
    dir,
    free: () => {
      const s = statfsSync(dir);
      return s.bavail * s.bsize;
    },
    async fillLeaving(leaveBytes) {
      const handle = await open(filler, 'a');
      try {
        const grow = disk.free() - leaveBytes;
        if (grow > 0) await handle.write(Buffer.alloc(grow));
        else if (grow < 0) await handle.truncate(Math.max(0, (await handle.stat()).size + grow));
      } finally {
        await handle.close();
      }
    },
    unfill: () => rm(filler, { force: true }),
    readOnly(on) {
      execFileSync('mount', ['-o', `remount,${on ? 'ro' : 'rw'}`, dir]);
    },
  };
  return disk;
}
