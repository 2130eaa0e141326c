import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Test } from 'tap';
import { canMount } from './tmpfs.js';

// A real disk that goes read-only under open files, as an ext4 file system does on an I/O
// error with `errors=remount-ro` (the default of many distributions). A tmpfs cannot show it:
// the kernel refuses to remount a file system read-only while a file on it is open for writing
// (the SQLite database is), but an ext4 error turns it read-only whatever is open. Here: an
// ext4 image on a loop device, and the error raised through /sys/fs/ext4/<dev>/trigger_fs_error.

export interface FailingDisk {
  readonly dir: string;
  /** Raises a file-system error: the kernel makes the mount read-only at once (emergency_ro). */
  fail(): void;
}

/** Why a failing disk cannot be made here, or undefined when it can. */
export function failingDiskMissing(): string | undefined {
  if (!canMount) return 'needs root to mount a loop device';
  try {
    execFileSync('mkfs.ext4', ['-V'], { stdio: 'ignore' });
  } catch {
    return 'needs mkfs.ext4 (e2fsprogs)';
  }
  if (!existsSync('/dev/loop-control')) return 'needs loop devices (/dev/loop-control)';
  return undefined;
}

export async function mountFailingDisk(t: Test, dir: string, sizeMb = 32): Promise<FailingDisk> {
  await mkdir(dir, { recursive: true });
  const image = `${dir}.img`;
  execFileSync('truncate', ['-s', `${sizeMb}M`, image]);
  execFileSync('mkfs.ext4', ['-q', '-F', image]);
  execFileSync('mount', ['-o', 'loop,errors=remount-ro', image, dir]);
  t.teardown(async () => {
    // Lazy: a server that is still closing files does not keep the mount (and loop device) behind.
    execFileSync('umount', ['-l', dir]);
    await rm(image, { force: true });
  });
  const device = basename(execFileSync('findmnt', ['-no', 'SOURCE', dir]).toString().trim());
  return {
    dir,
    fail() {
      execFileSync('sh', ['-c', `echo test > ${join('/sys/fs/ext4', device, 'trigger_fs_error')}`]);
    },
  };
}
