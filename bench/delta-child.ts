import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { applyDelta } from '../agent/apply.js';
import runDiffTask from '../src/actors/diff-pool/pipeline.js';
import type { DeltaEngine } from '../src/shared/config/types.js';
import type { DiffTask } from '../src/messages/diff.js';
import type { DeltaFormat } from '../src/shared/delta-formats.js';
import { sha256File } from '../src/shared/hash.js';
import { makeFixture } from '../test/helpers/fixture.js';
import { heartbeatUntilSigned } from '../test/helpers/http.js';
import { startTestServer } from '../test/helpers/server.js';

// One measurement in a fresh Node.js process, so its peak RSS (`maxRSS`) belongs to that
// measurement alone. Prints one JSON line on stdout.
//
//   pipeline  the diff-pool task exactly as the pool runs it (hash checks, the engine, its
//             verification, zstd); with bsdiff-node also the target bytes handed over from
//             the target cache, as the store-keeper does
//   apply     the agent's delta step (BSDIFF40: zstd frames to .patch, then streaming bspatch
//             into a slot; bsdiff-lzma: streamed from the file as served)
//   server    the real server path: publish both versions, heartbeat from the old one and
//             poll until the manifest is signed (the delta generated on demand)
//   idle      only the modules loaded: Node's own floor, for reading the peaks above

export interface ChildJob {
  readonly mode: 'pipeline' | 'apply' | 'server' | 'idle';
  readonly engine?: DeltaEngine;
  readonly sourcePath: string;
  readonly sourceHash: string;
  readonly targetPath: string;
  readonly targetHash: string;
  readonly workDir: string;
  /** apply: the patch as served (BSDIFF40 zstd-compressed, bsdiff-lzma as written). */
  readonly transferPath?: string;
  /** apply: the patch's format (BSDIFF40 unless named). */
  readonly format?: DeltaFormat;
}

export interface ChildOutcome {
  readonly ms: number;
  /** CPU time of this process and the children it waited for (user + system). */
  readonly cpuMs: number;
  readonly maxRssKb: number;
  readonly deltaBytes?: number;
}

function cpuMs(): number {
  const self = process.resourceUsage();
  return (self.userCPUTime + self.systemCPUTime) / 1000;
}

async function pipeline(job: ChildJob): Promise<Omit<ChildOutcome, 'maxRssKb'>> {
  const engine = job.engine ?? 'native';
  let targetBytes: SharedArrayBuffer | undefined;
  if (engine === 'bsdiff-node') {
    const bytes = await readFile(job.targetPath);
    targetBytes = new SharedArrayBuffer(bytes.length);
    new Uint8Array(targetBytes).set(bytes);
  }
  const task: DiffTask = {
    kind: 'delta', sourcePath: job.sourcePath, sourceHash: job.sourceHash, targetPath: job.targetPath,
    targetHash: job.targetHash, engine, ...(targetBytes ? { targetBytes } : {}), outDir: job.workDir, workDir: job.workDir,
  };
  const cpu = cpuMs();
  const started = performance.now();
  const outcome = await runDiffTask(task);
  const ms = performance.now() - started;
  if (!outcome.ok) throw new Error(`the diff task failed: ${outcome.error.code} ${outcome.error.message}`);
  await rm(outcome.result.tempPath, { force: true });
  return { ms, cpuMs: cpuMs() - cpu, deltaBytes: outcome.result.size };
}

async function apply(job: ChildJob): Promise<Omit<ChildOutcome, 'maxRssKb'>> {
  const slotDir = await mkdtemp(join(job.workDir, 'slots-'));
  try {
    const targetSlot = join(slotDir, 'b');
    const cpu = cpuMs();
    const started = performance.now();
    await applyDelta(slotDir, job.transferPath!, job.sourcePath, targetSlot, job.format);
    const ms = performance.now() - started;
    if ((await sha256File(targetSlot)).hash !== job.targetHash) throw new Error('the agent rebuilt different bytes');
    return { ms, cpuMs: cpuMs() - cpu };
  } finally {
    await rm(slotDir, { recursive: true, force: true });
  }
}

async function server(job: ChildJob): Promise<Omit<ChildOutcome, 'maxRssKb'>> {
  const fixture = await makeFixture('updater-bench-server-');
  try {
    const running = await startTestServer(fixture, [
      { name: 'app', version: '2', binary: job.targetPath },
      { name: 'previous', version: '1', binary: job.sourcePath },
    ], { default_artifact: 'app', store: { delta_engine: job.engine ?? 'native', delta_max_source_mb: 0 } });
    try {
      const cpu = cpuMs();
      const started = performance.now();
      const manifest = await heartbeatUntilSigned(running.url, job.sourceHash, 'app', 1_800_000);
      const ms = performance.now() - started;
      if (!manifest.delta_endpoint) throw new Error('the server signed a full download, not a delta');
      return { ms, cpuMs: cpuMs() - cpu, deltaBytes: manifest.delta_size };
    } finally {
      await running.stop();
    }
  } finally {
    await fixture.cleanup();
  }
}

const job = JSON.parse(process.argv[2] ?? '{}') as ChildJob;
const modes = { pipeline, apply, server, idle: async () => ({ ms: 0, cpuMs: 0 }) };
modes[job.mode](job).then(
  (result) => console.log(JSON.stringify({ ...result, maxRssKb: process.resourceUsage().maxRSS })),
  (err) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exitCode = 1;
  },
);
