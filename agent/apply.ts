import { open, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import engine from 'updater-delta-engine';
import type { DeltaFormat } from '../src/shared/delta-formats.js';
import { UpdaterError, isUpdaterError } from '../src/shared/errors.js';
import { faultPoint } from './fault.js';
import { decompressFileInto } from './zstd-frames.js';

// Step 6: rebuild the target into the inactive slot. Memory: a BSDIFF40 delta's zstd stream
// is decompressed one frame (at most 8 MiB of output) at a time into the patch file; the
// delta engine's streaming bspatch (native/delta) reads the source slot, reads the patch's
// three bzip2 streams as it goes and writes the target 1 MiB at a time, so a delta costs
// the source slot's pages plus a few MiB, and full mode about one frame. A bsdiff-lzma delta
// is applied from the downloaded file as it is (its three xz streams decoded as they go,
// with 1 MiB dictionaries: a few MiB whatever the image size).

const PATCH_FILE = '.patch';

/**
 * Removes the decompressed patch a crash during a delta's rebuild left behind: it is written
 * again from the kept transfer before any use, and until then it holds up to a whole patch of
 * the device's disk. Called at start, under the slot directory's lock.
 */
export async function removeLeftoverPatch(slotDir: string): Promise<void> {
  await rm(join(slotDir, PATCH_FILE), { force: true });
}

function diskFull(err: unknown, what: string): unknown {
  return (err as NodeJS.ErrnoException).code === 'ENOSPC' ? new UpdaterError('AGENT_DISK_FULL', `${what}: no space left on the device`) : err;
}

/**
 * The permission bits of the slot being replaced: the rebuilt slot takes them, so an
 * executable stays executable (bspatch creates its output 0644 whatever the source was).
 */
async function slotMode(activeSlot: string): Promise<number> {
  try {
    return (await stat(activeSlot)).mode & 0o7777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0o755;
    throw err;
  }
}

/** Decompresses `zstdPath` into a new `outPath` with `mode`, fsynced before it returns. */
async function decompressTo(zstdPath: string, outPath: string, mode: number, afterFrame?: () => void): Promise<void> {
  const out = await open(outPath, 'w', mode);
  try {
    await decompressFileInto(zstdPath, out, afterFrame);
    // open's mode passes through the umask and does not touch an existing file; fchmod does neither.
    await out.chmod(mode);
    await out.sync();
  } catch (err) {
    throw diskFull(err, outPath);
  } finally {
    await out.close();
  }
}

export async function applyDelta(slotDir: string, transferPath: string, sourceSlot: string, targetSlot: string, format: DeltaFormat = 'bsdiff40'): Promise<void> {
  const patchPath = join(slotDir, PATCH_FILE);
  const mode = await slotMode(sourceSlot);
  try {
    if (format === 'bsdiff40') await decompressTo(transferPath, patchPath, 0o600);
    try {
      // A corrupt patch of either format fails here alike (DELTA_CORRUPT_PATCH → AGENT_RECONSTRUCTION_MISMATCH).
      engine.patch(sourceSlot, format === 'bsdiff40' ? patchPath : transferPath, targetSlot);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'DELTA_DISK_FULL') throw new UpdaterError('AGENT_DISK_FULL', `${targetSlot}: no space left on the device`);
      throw isUpdaterError(err) ? err
        : new UpdaterError('AGENT_RECONSTRUCTION_MISMATCH', `bspatch could not apply the delta: ${(err as Error).message}`);
    }
    faultPoint('mid-patch');
    const written = await open(targetSlot, 'r+');
    try {
      await written.chmod(mode);
      await written.sync();
    } finally {
      await written.close();
    }
  } finally {
    await rm(patchPath, { force: true });
  }
}

export async function applyFull(transferPath: string, activeSlot: string, targetSlot: string): Promise<void> {
  await decompressTo(transferPath, targetSlot, await slotMode(activeSlot), () => faultPoint('mid-patch'));
}
