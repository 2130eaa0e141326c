import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import engine from 'updater-delta-engine';
import type { ChildJob, ChildOutcome } from './delta-child.js';
import { runMeasured, type Measured } from './measure.js';
import { FORMAT_CORPUS, npmExecutablePair } from './npm-pair.js';
import type { DeltaFormat } from '../src/shared/delta-formats.js';
import { formatMedianRow, measureFormats } from './patch-formats.js';
import { elfPair, firmwarePair, type Pair } from './pairs.js';
import { formatNumber, median, type RatioRow, type SuiteRecord } from './report.js';

// Delta generation: our native engine against the stock `bsdiff` command (Debian 4.3) on the
// same pairs in one run, interleaved, REPEATS times each in fresh processes (medians kept):
// time and peak memory of the engine program and of the whole diff-pool task, patch size,
// every patch applied by stock `bspatch`; then the agent's apply step and the real server
// path (publish, heartbeat, poll until signed). bsdiff-node, the fallback engine, is measured
// on the 12 MB pairs for reference.

const REPEATS = Number(process.env.BENCH_DELTA_REPEATS) > 0 ? Number(process.env.BENCH_DELTA_REPEATS) : 3;
/** The ~98 MB real pair takes minutes per run: once unless asked. */
const BIG_REPEATS = Number(process.env.BENCH_DELTA_BIG_REPEATS) > 0 ? Number(process.env.BENCH_DELTA_BIG_REPEATS) : 1;
const GOAL_TIME = 0.8;
const GOAL_PEAK_VS_COMMAND = 1.0;
const GOAL_PEAK_VS_INPUT = 9;
const GOAL_PATCH_SIZE = 1.02;
const GOAL_APPLY = 1.0;
const CHILD = fileURLToPath(new URL('./delta-child.js', import.meta.url));

interface Runs {
  command: Measured[];
  program: Measured[];
  task: ChildOutcome[];
  taskPeakKb: number[];
  fallback: ChildOutcome[];
}

export async function runDeltaBench(): Promise<SuiteRecord> {
  const dir = await mkdtemp(join(tmpdir(), 'updater-bench-delta-'));
  try {
    const pairs = [await firmwarePair(dir), await elfPair(dir, process.execPath), await npmExecutablePair()].filter((p): p is Pair => p !== undefined);
    const record: SuiteRecord = { repeats: REPEATS, big_pair_repeats: BIG_REPEATS };
    const ratios: RatioRow[] = [];
    const idle = await runChild({ mode: 'idle', sourcePath: '', sourceHash: '', targetPath: '', targetHash: '', workDir: dir }, dir);
    const floorKb = idle.outcome.maxRssKb;
    record.node_idle_peak_rss_mb = mbOf(floorKb);
    for (const pair of pairs) {
      console.log(`  pair ${pair.name}: ${pair.description}, target ${formatNumber(pair.newSize)} bytes`);
      const big = pair.newSize > 32 * 1024 * 1024;
      const runs = await measurePair(pair, dir, big ? BIG_REPEATS : REPEATS, !big);
      const larger = Math.max((await stat(pair.oldPath)).size, pair.newSize);
      const patches = await comparePatches(pair, dir);
      const applied = await measureApply(pair, dir, patches.ours);
      const served = await runChild({ ...jobOf(pair, dir), mode: 'server', engine: 'native' }, dir);
      console.log(`  ${pair.name}: server path (publish, heartbeat, signed) ${seconds(served.outcome.ms)}; agent apply ${mbOf(applied.maxRssKb)} MB peak`);
      await rm(patches.ours, { force: true });

      const commandMs = median(runs.command.map((m) => m.wallMs));
      const commandKb = median(runs.command.map((m) => m.peakRssKb));
      const programKb = median(runs.program.map((m) => m.peakRssKb));
      const taskMs = median(runs.task.map((o) => o.ms));
      Object.assign(record, {
        [`${pair.name}_bsdiff_command_s`]: round(commandMs / 1000, 3),
        [`${pair.name}_bsdiff_command_cpu_s`]: round(median(runs.command.map((m) => m.cpuMs)) / 1000, 3),
        [`${pair.name}_bsdiff_command_peak_rss_mb`]: mbOf(commandKb),
        [`${pair.name}_bsdiff_command_patch_bytes`]: patches.commandBytes,
        [`${pair.name}_engine_s`]: round(median(runs.program.map((m) => m.wallMs)) / 1000, 3),
        [`${pair.name}_engine_cpu_s`]: round(median(runs.program.map((m) => m.cpuMs)) / 1000, 3),
        [`${pair.name}_engine_peak_rss_mb`]: mbOf(programKb),
        [`${pair.name}_engine_patch_bytes`]: patches.oursBytes,
        [`${pair.name}_task_s`]: round(taskMs / 1000, 3),
        [`${pair.name}_task_peak_rss_mb`]: mbOf(median(runs.taskPeakKb)),
        [`${pair.name}_task_delta_zst_bytes`]: runs.task[0]?.deltaBytes,
        [`${pair.name}_server_path_s`]: round(served.outcome.ms / 1000, 3),
        [`${pair.name}_agent_apply_peak_rss_mb`]: mbOf(applied.maxRssKb),
        [`${pair.name}_agent_apply_s`]: round(applied.ms / 1000, 3),
        [`${pair.name}_stock_bspatch_rebuilds`]: patches.stockRebuilds,
      });
      if (runs.fallback.length > 0) record[`${pair.name}_bsdiff_node_task_s`] = round(median(runs.fallback.map((o) => o.ms)) / 1000, 3);
      ratios.push(
        { name: `${pair.name}: generation time (diff-pool task) / bsdiff command`, value: taskMs / commandMs, goal: { max: GOAL_TIME }, note: `${seconds(taskMs)} vs ${seconds(commandMs)}, wall` },
        { name: `${pair.name}: engine CPU time / bsdiff command`, value: median(runs.program.map((m) => m.cpuMs)) / median(runs.command.map((m) => m.cpuMs)), note: 'user+sys; the engine spreads bzip2 over a second core' },
        { name: `${pair.name}: engine peak RSS / bsdiff command`, value: programKb / commandKb, goal: { max: GOAL_PEAK_VS_COMMAND }, note: `${mbOf(programKb)} vs ${mbOf(commandKb)} MB` },
        { name: `${pair.name}: engine peak RSS / larger input`, value: (programKb * 1024) / larger, goal: { max: GOAL_PEAK_VS_INPUT } },
        { name: `${pair.name}: patch size / bsdiff command's`, value: patches.oursBytes / patches.commandBytes, goal: { max: GOAL_PATCH_SIZE }, note: `${formatNumber(patches.oursBytes)} vs ${formatNumber(patches.commandBytes)} bytes; stock bspatch rebuilds: ${patches.stockRebuilds}` },
        { name: `${pair.name}: agent apply peak / (2 × target + Node floor)`, value: applied.maxRssKb / (2 * pair.newSize / 1024 + floorKb), goal: { max: GOAL_APPLY }, note: `${mbOf(applied.maxRssKb)} MB, floor ${mbOf(floorKb)} MB` },
        { name: `${pair.name}: server path publish→signed / bsdiff command`, value: served.outcome.ms / commandMs, note: `${seconds(served.outcome.ms)}, heartbeat polled every 100 ms` },
      );
      if (runs.fallback.length > 0) {
        ratios.push({ name: `${pair.name}: bsdiff-node task / native task`, value: median(runs.fallback.map((o) => o.ms)) / taskMs, note: 'the fallback engine, same run' });
      }
    }
    // The patch formats over the real executables: the corpus pairs, then biome when present.
    const corpus = [...(await Promise.all(FORMAT_CORPUS.map((p) => npmExecutablePair(p)))), pairs.find((p) => p.name === 'biome')]
      .filter((p): p is Pair => p !== undefined);
    const formatRatios: number[] = [];
    for (const pair of corpus) {
      const formats = await measureFormats(pair, dir, async (patchPath) => (await measureApply(pair, dir, patchPath, 'bsdiff-lzma')).maxRssKb, floorKb);
      ratios.push(...formats.rows);
      Object.assign(record, formats.record);
      formatRatios.push(formats.lzmaRatio);
    }
    if (formatRatios.length > 0) ratios.push(formatMedianRow(formatRatios, corpus.map((p) => p.name)));
    record.ratios = ratios;
    return record;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function jobOf(pair: Pair, dir: string): Omit<ChildJob, 'mode'> {
  return { sourcePath: pair.oldPath, sourceHash: pair.oldHash, targetPath: pair.newPath, targetHash: pair.newHash, workDir: dir };
}

async function measurePair(pair: Pair, dir: string, repeats: number, withFallback: boolean): Promise<Runs> {
  const runs: Runs = { command: [], program: [], task: [], taskPeakKb: [], fallback: [] };
  const scratch = join(dir, `${pair.name}.scratch`);
  for (let i = 0; i < repeats; i++) {
    const command = await runMeasured('bsdiff', [pair.oldPath, pair.newPath, scratch], dir, 3_600_000);
    const program = await runMeasured(engine.programPath, ['diff', pair.oldPath, pair.newPath, scratch], dir, 3_600_000);
    await rm(scratch, { force: true });
    const task = await runChild({ ...jobOf(pair, dir), mode: 'pipeline', engine: 'native' }, dir);
    runs.command.push(command);
    runs.program.push(program);
    runs.task.push(task.outcome);
    runs.taskPeakKb.push(task.peakRssKb);
    let fallbackText = '';
    if (withFallback) {
      const fallback = await runChild({ ...jobOf(pair, dir), mode: 'pipeline', engine: 'bsdiff-node' }, dir);
      runs.fallback.push(fallback.outcome);
      fallbackText = `; bsdiff-node task ${seconds(fallback.outcome.ms)} ${mbOf(fallback.peakRssKb)} MB`;
    }
    console.log(`  ${pair.name} run ${i + 1}: bsdiff command ${seconds(command.wallMs)} (cpu ${seconds(command.cpuMs)}) ${mbOf(command.peakRssKb)} MB; `
      + `engine ${seconds(program.wallMs)} (cpu ${seconds(program.cpuMs)}) ${mbOf(program.peakRssKb)} MB; task ${seconds(task.outcome.ms)}${fallbackText}`);
  }
  return runs;
}

/** Both patches of the pair, and whether stock bspatch rebuilds the target from ours. */
async function comparePatches(pair: Pair, dir: string): Promise<{ ours: string; oursBytes: number; commandBytes: number; stockRebuilds: boolean }> {
  const ours = join(dir, `${pair.name}.ours.patch`);
  const theirs = join(dir, `${pair.name}.command.patch`);
  const rebuilt = join(dir, `${pair.name}.rebuilt`);
  await runMeasured('bsdiff', [pair.oldPath, pair.newPath, theirs], dir, 3_600_000);
  await runMeasured(engine.programPath, ['diff', pair.oldPath, pair.newPath, ours], dir, 3_600_000);
  await runMeasured('bspatch', [pair.oldPath, rebuilt, ours], dir);
  const stockRebuilds = createHash('sha256').update(await readFile(rebuilt)).digest('hex') === pair.newHash;
  const result = { ours, oursBytes: (await stat(ours)).size, commandBytes: (await stat(theirs)).size, stockRebuilds };
  await rm(theirs, { force: true });
  await rm(rebuilt, { force: true });
  return result;
}

/** The agent's apply step in a fresh process: BSDIFF40 zstd-compressed as served, bsdiff-lzma as written. */
async function measureApply(pair: Pair, dir: string, patchPath: string, format: DeltaFormat = 'bsdiff40'): Promise<ChildOutcome> {
  if (format !== 'bsdiff40') return (await runChild({ ...jobOf(pair, dir), mode: 'apply', transferPath: patchPath, format }, dir)).outcome;
  const transferPath = `${patchPath}.zst`;
  await runMeasured('zstd', ['-q', '-f', patchPath, '-o', transferPath], dir);
  try {
    return (await runChild({ ...jobOf(pair, dir), mode: 'apply', transferPath }, dir)).outcome;
  } finally {
    await rm(transferPath, { force: true });
  }
}

/** A child run, with its own report and GNU time's peak (the child or the engine it ran). */
async function runChild(job: ChildJob, dir: string): Promise<{ outcome: ChildOutcome; peakRssKb: number }> {
  const run = await runMeasured(process.execPath, [CHILD, JSON.stringify(job)], dir, 3_600_000);
  const line = run.stdout.trim().split('\n').pop();
  if (!line) throw new Error(`the ${job.mode} child printed nothing: ${run.stderr}`);
  return { outcome: JSON.parse(line) as ChildOutcome, peakRssKb: run.peakRssKb };
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
