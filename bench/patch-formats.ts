import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import engine from 'updater-delta-engine';
import { runMeasured } from './measure.js';
import type { Pair } from './pairs.js';
import { formatNumber, median, type RatioRow } from './report.js';

// The two patch formats on one pair, against Debian `bsdiff`'s patch of the same pair: the
// bytes each format is served as (BSDIFF40 zstd-compressed as the diff pool does, level 3;
// bsdiff-lzma as written), the engine program's time and peak memory for each, and the
// bsdiff command's. Goals from issue 40: bsdiff-lzma at most 0.95 × bsdiff's bytes on every
// pair and 0.85 × at the median (checked over the corpus by `formatMedianRow`), generation
// at most 0.5 × bsdiff's time, peak at most 6 × the larger input.

const GOAL_BYTES_EACH = 0.95;
const GOAL_BYTES_MEDIAN = 0.85;
const GOAL_TIME = 0.5;
const GOAL_PEAK_VS_INPUT = 6;

export interface FormatOutcome {
  readonly rows: RatioRow[];
  readonly record: Record<string, number>;
  /** bsdiff-lzma bytes / bsdiff's, for the corpus median. */
  readonly lzmaRatio: number;
}

/**
 * `applyPeakKb` runs the agent's apply step on a bsdiff-lzma patch in a fresh process and gives
 * its peak RSS; `floorKb` is an idle Node process's, so the difference is what applying costs.
 */
export async function measureFormats(pair: Pair, dir: string, applyPeakKb: (patchPath: string) => Promise<number>, floorKb: number): Promise<FormatOutcome> {
  const larger = Math.max((await stat(pair.oldPath)).size, pair.newSize);
  const bsdiffPatch = join(dir, `${pair.name}.bsdiff`);
  const b40 = join(dir, `${pair.name}.b40`);
  const lzma = join(dir, `${pair.name}.lzma`);
  try {
    const command = await runMeasured('bsdiff', [pair.oldPath, pair.newPath, bsdiffPatch], dir, 3_600_000);
    const plain = await runMeasured(engine.programPath, ['diff', pair.oldPath, pair.newPath, b40], dir, 3_600_000);
    const tight = await runMeasured(engine.programPath, ['diff', pair.oldPath, pair.newPath, lzma, 'bsdiff-lzma'], dir, 3_600_000);
    await runMeasured('zstd', ['-q', '-f', '-3', b40, '-o', `${b40}.zst`], dir);
    const applyKb = await applyPeakKb(lzma);
    const bytes = {
      bsdiff: (await stat(bsdiffPatch)).size,
      b40: (await stat(`${b40}.zst`)).size,
      lzma: (await stat(lzma)).size,
    };
    const lzmaRatio = bytes.lzma / bytes.bsdiff;
    console.log(`  ${pair.name} formats: bsdiff ${formatNumber(bytes.bsdiff)} B ${seconds(command.wallMs)} ${mb(command.peakRssKb)} MB; `
      + `bsdiff40 served ${formatNumber(bytes.b40)} B (${(bytes.b40 / bytes.bsdiff).toFixed(3)}×) ${seconds(plain.wallMs)} ${mb(plain.peakRssKb)} MB; `
      + `bsdiff-lzma served ${formatNumber(bytes.lzma)} B (${lzmaRatio.toFixed(3)}×) ${seconds(tight.wallMs)} ${mb(tight.peakRssKb)} MB`);
    const rows: RatioRow[] = [
      { name: `${pair.name}: served bsdiff-lzma bytes / bsdiff's patch`, value: lzmaRatio, goal: { max: GOAL_BYTES_EACH }, note: `${formatNumber(bytes.lzma)} vs ${formatNumber(bytes.bsdiff)} bytes` },
      { name: `${pair.name}: served bsdiff40 bytes / bsdiff's patch`, value: bytes.b40 / bytes.bsdiff, note: `${formatNumber(bytes.b40)} bytes (zstd -3 over the patch)` },
      { name: `${pair.name}: bsdiff-lzma generation / bsdiff command`, value: tight.wallMs / command.wallMs, goal: { max: GOAL_TIME }, note: `${seconds(tight.wallMs)} vs ${seconds(command.wallMs)} wall; bsdiff40 ${seconds(plain.wallMs)}` },
      { name: `${pair.name}: bsdiff-lzma CPU time / bsdiff command`, value: tight.cpuMs / command.cpuMs, note: `user+sys ${seconds(tight.cpuMs)} vs ${seconds(command.cpuMs)}: the wall-time ratio on a busy machine` },
      { name: `${pair.name}: bsdiff-lzma peak RSS / larger input`, value: (tight.peakRssKb * 1024) / larger, goal: { max: GOAL_PEAK_VS_INPUT }, note: `${mb(tight.peakRssKb)} MB; bsdiff40 ${mb(plain.peakRssKb)} MB, bsdiff ${mb(command.peakRssKb)} MB` },
      { name: `${pair.name}: agent apply of bsdiff-lzma, peak RSS / idle Node`, value: applyKb / floorKb, note: `${mb(applyKb)} MB against ${mb(floorKb)} MB idle: the target (${mb(pair.newSize / 1024)} MB) is written as it comes, never held` },
    ];
    const record = {
      [`${pair.name}_format_bsdiff_bytes`]: bytes.bsdiff,
      [`${pair.name}_format_bsdiff40_served_bytes`]: bytes.b40,
      [`${pair.name}_format_lzma_served_bytes`]: bytes.lzma,
      [`${pair.name}_format_lzma_s`]: Number((tight.wallMs / 1000).toFixed(3)),
      [`${pair.name}_format_lzma_peak_rss_mb`]: mb(tight.peakRssKb),
      [`${pair.name}_format_lzma_apply_peak_rss_mb`]: mb(applyKb),
    };
    return { rows, record, lzmaRatio };
  } finally {
    await Promise.all([bsdiffPatch, b40, `${b40}.zst`, lzma].map((path) => rm(path, { force: true })));
  }
}

/** The corpus median of bsdiff-lzma's bytes over bsdiff's. */
export function formatMedianRow(ratios: readonly number[], names: readonly string[]): RatioRow {
  return { name: 'patch formats: median served bsdiff-lzma bytes / bsdiff\'s patch', value: median([...ratios]), goal: { max: GOAL_BYTES_MEDIAN }, note: `over ${names.join(', ')}` };
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

function mb(kb: number): number {
  return Number((kb / 1024).toFixed(1));
}
