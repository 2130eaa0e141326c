import { createHash } from 'node:crypto';
import { open, rm, stat } from 'node:fs/promises';
import bsdiff from 'bsdiff-node';
import type { DiffOutcome, DiffResult, DiffTask } from '../../messages/diff.js';
import { openTemp, storeWriteError, tempPathFor, writeFully } from '../../shared/durable-file.js';
import { UpdaterError, serializeError } from '../../shared/errors.js';
import { sha256File } from '../../shared/hash.js';
import { zstdCompress } from './zstd.js';
import { nativeDiff } from './native-engine.js';

// One diff job: a BSDIFF40 patch then zstd, or a bsdiff-lzma patch stored as written (its
// streams are xz already: zstd over them only added bytes), as a delta; or zstd alone (a full file). It verifies
// its inputs and its own output before it reports, so the store only ever publishes files that
// rebuild the target bit for bit. The patch comes from the engine the task names
// (`store.delta_engine`): our native engine in a child process, or bsdiff-node in this thread.
// The diff pool runs it in a Piscina thread (src/actors/diff-pool/task.ts); bench/delta-child.ts
// measures it as the pool runs it.

/**
 * zstd is applied frame by frame: the binding compresses whole buffers only, and
 * concatenated frames are one valid zstd stream (`zstd -d` restores them as one file), so
 * memory stays at one chunk however large the input.
 */
const FRAME_BYTES = 8 * 1024 * 1024;

/** bsdiff output is already bzip2-compressed; a fast zstd level costs little and loses nothing. */
export const DELTA_ZSTD_LEVEL = 3;

export default async function runDiffTask(task: DiffTask): Promise<DiffOutcome> {
  const started = performance.now();
  try {
    const written = task.kind === 'delta'
      ? await makeDelta(task)
      : await compressFile(task.targetPath, task.targetHash, task.outDir, task.level);
    return { ok: true, result: { ...written, durationMs: performance.now() - started } };
  } catch (err) {
    // Errors cross the pool boundary as data so their stable code survives; a full or
    // read-only disk becomes STORE_FULL / STORE_READ_ONLY.
    return { ok: false, error: serializeError(storeWriteError(err, `a ${task.kind} file`)) };
  }
}

async function makeDelta(task: Extract<DiffTask, { kind: 'delta' }>): Promise<Omit<DiffResult, 'durationMs'>> {
  const patchPath = tempPathFor(task.workDir);
  try {
    if (task.engine === 'native') {
      await nativeDelta(task, patchPath);
    } else {
      if (task.format !== undefined && task.format !== 'bsdiff40') throw new UpdaterError('DIFF_FAILED', `bsdiff-node writes bsdiff40 only, not ${task.format}`);
      await bsdiffNodeDelta(task, patchPath);
    }
    if (task.format === 'bsdiff-lzma') return await copyFile(patchPath, task.outDir);
    return await compressFile(patchPath, undefined, task.outDir, DELTA_ZSTD_LEVEL);
  } finally {
    await rm(patchPath, { force: true });
  }
}

/**
 * Our engine, in a child process: it writes the patch, then applies it streamed and compares
 * every rebuilt byte with the target file. Meanwhile this thread checks that the source and
 * the target files hash to what the store says, so a patch that rebuilds the target file
 * rebuilds `targetHash`. All three settle before anything is read or removed.
 */
async function nativeDelta(task: Extract<DiffTask, { kind: 'delta' }>, patchPath: string): Promise<void> {
  const settled = await Promise.allSettled([
    nativeDiff(task.sourcePath, task.targetPath, patchPath, undefined, task.format),
    expectHash(task.sourcePath, task.sourceHash),
    expectHash(task.targetPath, task.targetHash),
  ]);
  const failed = settled.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failed) throw failed.reason;
}

/** The fallback engine: bsdiff-node holds both files and the patch in memory. */
async function bsdiffNodeDelta(task: Extract<DiffTask, { kind: 'delta' }>, patchPath: string): Promise<void> {
  await expectHash(task.sourcePath, task.sourceHash);
  const rebuiltPath = tempPathFor(task.workDir);
  try {
    // The synchronous forms: this pool thread has nothing else to do, and the promise forms
    // resolve on the first progress report of 100 %, which can come before the file is closed.
    bsdiff.diffSync(task.sourcePath, task.targetPath, patchPath);
    // Apply the patch we just made: only a delta that rebuilds the target is ever stored.
    bsdiff.patchSync(task.sourcePath, rebuiltPath, patchPath);
    await expectRebuilt(rebuiltPath, task.targetHash, task.targetBytes);
  } finally {
    await rm(rebuiltPath, { force: true });
  }
}

async function expectHash(path: string, expected: string): Promise<void> {
  const { hash } = await sha256File(path);
  if (hash !== expected) {
    throw new UpdaterError('STORE_CORRUPT', `${path} hashes to ${hash}, not ${expected}`, { path, expected });
  }
}

async function expectRebuilt(path: string, targetHash: string, targetBytes?: SharedArrayBuffer): Promise<void> {
  if (targetBytes) {
    const rebuilt = await stat(path);
    if (rebuilt.size === targetBytes.byteLength) {
      const handle = await open(path, 'r');
      try {
        const buffer = Buffer.allocUnsafe(rebuilt.size);
        await handle.read(buffer, 0, rebuilt.size, 0);
        if (buffer.equals(new Uint8Array(targetBytes))) return;
      } finally {
        await handle.close();
      }
    }
    throw new UpdaterError('DIFF_FAILED', 'the patch does not rebuild the target');
  }
  const { hash } = await sha256File(path);
  if (hash !== targetHash) throw new UpdaterError('DIFF_FAILED', 'the patch does not rebuild the target');
}

/** Copies `inputPath` as it is into a new fsynced temporary in `outDir`, hashing it. */
function copyFile(inputPath: string, outDir: string): Promise<Omit<DiffResult, 'durationMs'>> {
  return compressFile(inputPath, undefined, outDir, 0);
}

/**
 * Compresses `inputPath` into a new fsynced temporary in `outDir`, hashing both sides; level 0
 * copies the bytes unchanged.
 */
async function compressFile(inputPath: string, expectedInputHash: string | undefined, outDir: string, level: number): Promise<Omit<DiffResult, 'durationMs'>> {
  const input = await open(inputPath, 'r');
  const { path: tempPath, handle: output } = await openTemp(outDir);
  const inputHasher = createHash('sha256');
  const outputHasher = createHash('sha256');
  let size = 0;
  try {
    const chunk = Buffer.allocUnsafe(FRAME_BYTES);
    for (;;) {
      const { bytesRead } = await input.read(chunk, 0, FRAME_BYTES, null);
      if (bytesRead === 0) break;
      const slice = chunk.subarray(0, bytesRead);
      inputHasher.update(slice);
      const frame = level === 0 ? slice : await zstdCompress(Buffer.from(slice), level);
      outputHasher.update(frame);
      await writeFully(output, frame);
      size += frame.length;
    }
    if (size === 0 && level > 0) {
      // An empty input still needs a valid zstd stream.
      const frame = await zstdCompress(Buffer.alloc(0), level);
      outputHasher.update(frame);
      await writeFully(output, frame);
      size = frame.length;
    }
    if (expectedInputHash !== undefined) {
      const actual = inputHasher.digest('hex');
      if (actual !== expectedInputHash) {
        throw new UpdaterError('STORE_CORRUPT', `${inputPath} hashes to ${actual}, not ${expectedInputHash}`);
      }
    }
    await output.sync();
  } catch (err) {
    await output.close();
    await rm(tempPath, { force: true });
    throw err;
  } finally {
    await input.close();
  }
  await output.close();
  const hash = outputHasher.digest('hex');
  // Read back what the disk holds: the store publishes it under a name and signs this hash.
  const written = await sha256File(tempPath).catch(async (err) => {
    await rm(tempPath, { force: true });
    throw err;
  });
  if (written.hash !== hash || written.size !== size) {
    await rm(tempPath, { force: true });
    throw new UpdaterError('STORE_CORRUPT', `a compressed file reads back as ${written.size} bytes hashing to ${written.hash}, not the ${size} bytes written`);
  }
  return { tempPath, size, hash };
}
