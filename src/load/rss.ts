// Samples the server's resident memory from its /metrics page once a second, and judges a
// soak: under the bound, and not trending upward.

const RSS_METRIC = 'updater_process_resident_memory_bytes';

export interface RssSample {
  readonly atSeconds: number;
  readonly bytes: number;
}

export async function readServerRss(baseUrl: string): Promise<number | undefined> {
  try {
    const response = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(2000) });
    const text = await response.text();
    const line = text.split('\n').find((l) => l.startsWith(`${RSS_METRIC} `));
    return line ? Number(line.split(' ')[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Least-squares slope of RSS over time, in bytes per minute. */
export function rssSlopePerMinute(samples: readonly RssSample[]): number {
  const n = samples.length;
  if (n < 3) return 0;
  const meanX = samples.reduce((s, p) => s + p.atSeconds, 0) / n;
  const meanY = samples.reduce((s, p) => s + p.bytes, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of samples) {
    num += (p.atSeconds - meanX) * (p.bytes - meanY);
    den += (p.atSeconds - meanX) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 60;
}

/**
 * How fast the floor of RSS rises, in bytes per minute: the samples are cut into three equal
 * spans and the lowest value of the first is compared with the lowest of the last. A heap that
 * breathes (V8 grows it, then a major GC gives it back) leaves the floor flat however its
 * peaks fall; a leak raises it. A plain regression cannot tell the two apart over a short run.
 */
export function rssFloorGrowthPerMinute(samples: readonly RssSample[]): number {
  if (samples.length < 6) return 0;
  const third = Math.floor(samples.length / 3);
  const first = samples.slice(0, third);
  const last = samples.slice(samples.length - third);
  const floor = (span: readonly RssSample[]) => Math.min(...span.map((s) => s.bytes));
  const centre = (span: readonly RssSample[]) => (span[0]!.atSeconds + span[span.length - 1]!.atSeconds) / 2;
  const minutes = (centre(last) - centre(first)) / 60;
  return minutes > 0 ? (floor(last) - floor(first)) / minutes : 0;
}

export interface SoakVerdict {
  readonly ok: boolean;
  readonly peakBytes: number;
  /** Growth of the RSS floor after warm-up (see rssFloorGrowthPerMinute). */
  readonly slopeBytesPerMinute: number;
  readonly reasons: string[];
}

/** Caches fill to their budgets and V8 sizes its heaps in the first half minute or so. */
export const SOAK_WARMUP_SECONDS = 30;

/**
 * The warm-up (the first SOAK_WARMUP_SECONDS, or the first quarter of a longer run) is left
 * out of the growth judgement: after it, a bounded server is flat. The peak counts throughout.
 */
export function judgeSoak(samples: readonly RssSample[], boundBytes: number, maxSlopeBytesPerMinute: number): SoakVerdict {
  const peakBytes = samples.reduce((m, s) => Math.max(m, s.bytes), 0);
  const last = samples[samples.length - 1]?.atSeconds ?? 0;
  const warmup = Math.max(SOAK_WARMUP_SECONDS, last / 4);
  const steady = samples.filter((s) => s.atSeconds >= warmup);
  const slope = rssFloorGrowthPerMinute(steady);
  const reasons: string[] = [];
  if (samples.length === 0) reasons.push('no RSS sample could be read from /metrics');
  else if (steady.length < 10) reasons.push(`too short to judge growth: run at least ${Math.ceil(warmup) + 10} s`);
  if (peakBytes > boundBytes) reasons.push(`peak RSS ${mb(peakBytes)} MB is over the bound of ${mb(boundBytes)} MB`);
  if (slope > maxSlopeBytesPerMinute) reasons.push(`RSS keeps growing: ${mb(slope)} MB/min after warm-up (limit ${mb(maxSlopeBytesPerMinute)} MB/min)`);
  return { ok: reasons.length === 0, peakBytes, slopeBytesPerMinute: slope, reasons };
}

export function mb(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1);
}
