import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildJob, PartsOutcome, PipelineOutcome } from './delta-child.js';
import { runMeasured } from './measure.js';
import { elfPair, firmwarePair, type Pair } from './pairs.js';
import { formatNumber, median, type RatioRow, type SuiteRecord } from './report.js';

// Delta generation: our diff-pool task against the stock `bsdiff` command on the same pair,
// in time and peak memory, and the size of our delta against `zstd -19` of the whole target
// (what a device would download without deltas). Each measurement runs REPEATS times in a
// fresh process, interleaved (bsdiff, ours, ours step by step), and the median is kept.

const REPEATS = Number(process.env.BENCH_DELTA_REPEATS) > 0 ? Number(process.env.BENCH_DELTA_REPEATS) : 3;
const GOAL_MAX_TIME_RATIO = 1.2;
const CHILD = fileURLToPath(new URL('./delta-child.js', import.meta.url));

interface PairRuns {
  bsdiffMs: number[];
  bsdiffCpuMs: number[];
  bsdiffPeakKb: number[];
  bsdiffPatchBytes: number;
  pipelineMs: number[];
  pipelineCpuMs: number[];
  pipelinePeakKb: number[];
  deltaBytes: number;
  parts: Record<string, number[]>;
  partsCpu: Record<string, number[]>;
}

export async function runDeltaBench(): Promise<SuiteRecord> {
  const dir = await mkdtemp(join(tmpdir(), 'updater-bench-delta-'));
  try {
    const pairs = [await firmwarePair(dir), await elfPair(dir, process.execPath)].filter((p): p is Pair => p !== undefined);
    const record: SuiteRecord = { repeats: REPEATS };
    const ratios: RatioRow[] = [];
    const idle = await runChild<{ maxRssKb: number }>({ mode: 'idle', sourcePath: '', sourceHash: '', targetPath: '', targetHash: '', workDir: dir }, dir);
    record.node_idle_peak_rss_mb = mbOf(idle.maxRssKb);
    for (const pair of pairs) {
      console.log(`  pair ${pair.name}: ${pair.description}, target ${formatNumber(pair.newSize)} bytes`);
      const zstd = await zstd19(pair, dir);
      const runs = await measurePair(pair, dir);
      Object.assign(record, pairRecord(pair.name, runs, zstd));
      const bsdiffMs = median(runs.bsdiffMs);
      const oursMs = median(runs.pipelineMs);
      ratios.push(
        { name: `${pair.name}: delta time, ours / bsdiff command`, value: oursMs / bsdiffMs, goal: { max: GOAL_MAX_TIME_RATIO }, note: `${seconds(oursMs)} vs ${seconds(bsdiffMs)}` },
        {
          name: `${pair.name}: delta CPU time, ours / bsdiff command`,
          value: median(runs.pipelineCpuMs) / median(runs.bsdiffCpuMs),
          goal: { max: GOAL_MAX_TIME_RATIO },
          note: 'user+sys: less moved by other load than wall time',
        },
        { name: `${pair.name}: peak RSS, ours / bsdiff command`, value: median(runs.pipelinePeakKb) / median(runs.bsdiffPeakKb), note: `${mbOf(median(runs.pipelinePeakKb))} vs ${mbOf(median(runs.bsdiffPeakKb))} MB` },
        {
          name: `${pair.name}: bsdiff-node diff alone / bsdiff command, CPU`,
          value: median(runs.partsCpu.bsdiff ?? []) / median(runs.bsdiffCpuMs),
          note: 'the library core, without our checks or zstd',
        },
        { name: `${pair.name}: delta size / zstd -19 of target`, value: runs.deltaBytes / zstd.bytes, note: `${formatNumber(runs.deltaBytes)} vs ${formatNumber(zstd.bytes)} bytes` },
      );
    }
    record.ratios = ratios;
    return record;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function measurePair(pair: Pair, dir: string): Promise<PairRuns> {
  const runs: PairRuns = {
    bsdiffMs: [], bsdiffCpuMs: [], bsdiffPeakKb: [], bsdiffPatchBytes: 0,
    pipelineMs: [], pipelineCpuMs: [], pipelinePeakKb: [], deltaBytes: 0, parts: {}, partsCpu: {},
  };
  const job = { sourcePath: pair.oldPath, sourceHash: pair.oldHash, targetPath: pair.newPath, targetHash: pair.newHash, workDir: dir };
  const patchPath = join(dir, `${pair.name}.bsdiff`);
  for (let i = 0; i < REPEATS; i++) {
    const stock = await runMeasured('bsdiff', [pair.oldPath, pair.newPath, patchPath], dir);
    runs.bsdiffMs.push(stock.wallMs);
    runs.bsdiffCpuMs.push(stock.cpuMs);
    runs.bsdiffPeakKb.push(stock.peakRssKb);
    runs.bsdiffPatchBytes = (await stat(patchPath)).size;
    await rm(patchPath, { force: true });

    const ours = await runChild<PipelineOutcome>({ mode: 'pipeline', ...job }, dir);
    runs.pipelineMs.push(ours.ms);
    runs.pipelineCpuMs.push(ours.cpuMs);
    runs.pipelinePeakKb.push(ours.maxRssKb);
    runs.deltaBytes = ours.deltaBytes;

    const steps = await runChild<PartsOutcome>({ mode: 'parts', ...job }, dir);
    for (const [name, step] of Object.entries(steps.parts)) {
      (runs.parts[name] ??= []).push(step.ms);
      (runs.partsCpu[name] ??= []).push(step.cpuMs);
    }

    const partText = Object.entries(steps.parts).map(([name, step]) => `${name} ${seconds(step.ms)}`).join(', ');
    console.log(`  ${pair.name} run ${i + 1}: bsdiff command ${seconds(stock.wallMs)} (cpu ${seconds(stock.cpuMs)}) ${mbOf(stock.peakRssKb)} MB (${stock.peakSource}); `
      + `ours ${seconds(ours.ms)} (cpu ${seconds(ours.cpuMs)}) ${mbOf(ours.maxRssKb)} MB; steps: ${partText}`);
  }
  return runs;
}

function pairRecord(name: string, runs: PairRuns, zstd: { bytes: number; ms: number }): Record<string, unknown> {
  const record: Record<string, unknown> = {
    [`${name}_bsdiff_command_s`]: round(median(runs.bsdiffMs) / 1000, 3),
    [`${name}_bsdiff_command_peak_rss_mb`]: mbOf(median(runs.bsdiffPeakKb)),
    [`${name}_bsdiff_command_patch_bytes`]: runs.bsdiffPatchBytes,
    [`${name}_bsdiff_command_cpu_s`]: round(median(runs.bsdiffCpuMs) / 1000, 3),
    [`${name}_ours_s`]: round(median(runs.pipelineMs) / 1000, 3),
    [`${name}_ours_cpu_s`]: round(median(runs.pipelineCpuMs) / 1000, 3),
    [`${name}_ours_peak_rss_mb`]: mbOf(median(runs.pipelinePeakKb)),
    [`${name}_ours_delta_bytes`]: runs.deltaBytes,
    [`${name}_zstd19_target_bytes`]: zstd.bytes,
    [`${name}_zstd19_target_s`]: round(zstd.ms / 1000, 3),
  };
  for (const [step, values] of Object.entries(runs.parts)) record[`${name}_step_${step}_s`] = round(median(values) / 1000, 3);
  for (const [step, values] of Object.entries(runs.partsCpu)) record[`${name}_step_${step}_cpu_s`] = round(median(values) / 1000, 3);
  // What the task adds around bsdiff itself (source hash, verification bspatch and compare,
  // zstd with fsync), summed from the steps in CPU time: a difference between two processes'
  // wall times would drown in other load.
  const added = ['source_hash', 'verify_bspatch', 'verify_compare_cached', 'zstd'].map((step) => median(runs.partsCpu[step] ?? []));
  record[`${name}_ours_added_to_bsdiff_cpu_s`] = round(added.reduce((sum, ms) => sum + ms, 0) / 1000, 3);
  return record;
}

/** `zstd -19` of the whole target: what a device downloads when there is no delta. */
async function zstd19(pair: Pair, dir: string): Promise<{ bytes: number; ms: number }> {
  const out = join(dir, `${pair.name}.zst`);
  const run = await runMeasured('zstd', ['-19', '-q', '-f', pair.newPath, '-o', out], dir);
  const bytes = (await stat(out)).size;
  await rm(out, { force: true });
  return { bytes, ms: run.wallMs };
}

async function runChild<T>(job: ChildJob, dir: string): Promise<T> {
  const run = await runMeasured(process.execPath, [CHILD, JSON.stringify(job)], dir);
  const line = run.stdout.trim().split('\n').pop();
  if (!line) throw new Error(`the ${job.mode} child printed nothing: ${run.stderr}`);
  return JSON.parse(line) as T;
}

function mbOf(kb: number): number {
  return round(kb / 1024, 1);
}

function round(value: number, digits: number): number {
  return Number(value.toFixed(digits));
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}
