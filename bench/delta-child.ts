import { readFile, rm } from 'node:fs/promises';
import bsdiff from 'bsdiff-node';
import runDiffTask, { DELTA_ZSTD_LEVEL } from '../src/shared/diff/pipeline.js';
import type { DiffTask } from '../src/messages/diff.js';
import { tempPathFor } from '../src/shared/durable-file.js';
import { sha256File } from '../src/shared/hash.js';

// One measurement in a fresh Node.js process, so its peak RSS (`maxRSS`) belongs to that
// measurement alone. Prints one JSON line on stdout.
//
//   pipeline  the diff-pool task exactly as the pool runs it (source hash check, bsdiff,
//             verification bspatch, zstd), with the target bytes handed over from the
//             target cache as the store-keeper does when the target fits its budget
//   parts     the same steps one by one, to see where the time goes
//   idle      only the modules loaded: Node's own floor, for reading the peaks above

export interface ChildJob {
  readonly mode: 'pipeline' | 'parts' | 'idle';
  readonly sourcePath: string;
  readonly sourceHash: string;
  readonly targetPath: string;
  readonly targetHash: string;
  readonly workDir: string;
}

export interface PipelineOutcome {
  readonly ms: number;
  /** CPU time of the task (user + system, all threads of this process). */
  readonly cpuMs: number;
  readonly maxRssKb: number;
  readonly deltaBytes: number;
}

export interface PartsOutcome {
  /** Wall and CPU milliseconds of each step. */
  readonly parts: Record<string, { ms: number; cpuMs: number }>;
  readonly maxRssKb: number;
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

async function targetCacheBytes(path: string): Promise<SharedArrayBuffer> {
  const bytes = await readFile(path);
  const shared = new SharedArrayBuffer(bytes.length);
  new Uint8Array(shared).set(bytes);
  return shared;
}

async function pipeline(job: ChildJob): Promise<PipelineOutcome> {
  const targetBytes = await targetCacheBytes(job.targetPath);
  const task: DiffTask = {
    kind: 'delta', sourcePath: job.sourcePath, sourceHash: job.sourceHash, targetPath: job.targetPath,
    targetHash: job.targetHash, targetBytes, outDir: job.workDir, workDir: job.workDir,
  };
  const cpu = process.cpuUsage();
  const started = performance.now();
  const outcome = await runDiffTask(task);
  const ms = performance.now() - started;
  const cpuMs = cpuMsSince(cpu);
  if (!outcome.ok) throw new Error(`the diff task failed: ${outcome.error.code} ${outcome.error.message}`);
  await rm(outcome.result.tempPath, { force: true });
  return { ms, cpuMs, maxRssKb: process.resourceUsage().maxRSS, deltaBytes: outcome.result.size };
}

async function parts(job: ChildJob): Promise<PartsOutcome> {
  const times: PartsOutcome['parts'] = {};
  const timed = async <T>(name: string, step: () => T | Promise<T>): Promise<T> => {
    const cpu = process.cpuUsage();
    const started = performance.now();
    const value = await step();
    times[name] = { ms: performance.now() - started, cpuMs: cpuMsSince(cpu) };
    return value;
  };
  const patchPath = tempPathFor(job.workDir);
  const rebuiltPath = tempPathFor(job.workDir);
  try {
    await timed('source_hash', () => sha256File(job.sourcePath));
    await timed('bsdiff', () => bsdiff.diffSync(job.sourcePath, job.targetPath, patchPath));
    await timed('verify_bspatch', () => bsdiff.patchSync(job.sourcePath, rebuiltPath, patchPath));
    // The two ways the task checks the rebuilt file: against cached target bytes, or by hash.
    const target = await targetCacheBytes(job.targetPath);
    await timed('verify_compare_cached', async () => {
      if (!(await readFile(rebuiltPath)).equals(new Uint8Array(target))) throw new Error('the rebuilt file differs');
    });
    await timed('verify_hash_uncached', async () => {
      if ((await sha256File(rebuiltPath)).hash !== job.targetHash) throw new Error('the rebuilt file hashes wrong');
    });
    // The task's own zstd step (frames, hashing, fsync), reached through its `full` kind.
    const patchHash = (await sha256File(patchPath)).hash;
    const compressed = await timed('zstd', () => runDiffTask({ kind: 'full', targetPath: patchPath, targetHash: patchHash, outDir: job.workDir, level: DELTA_ZSTD_LEVEL }));
    if (!compressed.ok) throw new Error(`zstd step failed: ${compressed.error.message}`);
    await rm(compressed.result.tempPath, { force: true });
  } finally {
    await rm(patchPath, { force: true });
    await rm(rebuiltPath, { force: true });
  }
  return { parts: times, maxRssKb: process.resourceUsage().maxRSS };
}

const job = JSON.parse(process.argv[2] ?? '{}') as ChildJob;
const run = job.mode === 'pipeline' ? pipeline(job) : job.mode === 'parts' ? parts(job) : Promise.resolve({ maxRssKb: process.resourceUsage().maxRSS });
run.then(
  (result) => console.log(JSON.stringify(result)),
  (err) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exitCode = 1;
  },
);
