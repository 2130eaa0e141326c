import type { RatioRow } from './report.js';
import { median } from './report.js';

// A ratio of medians hides how much each round moved: a slow round of the server paired with
// a fast round of the baseline vanishes in the medians. Every ratio is therefore taken per
// round (the subject and its baseline measured back to back in the same round) and reported
// as the median of those per-round ratios, with their minimum and maximum beside it.

export interface RoundRatios {
  readonly perRound: readonly number[];
  readonly min: number;
  readonly median: number;
  readonly max: number;
}

/** `subject[i] / baseline[i]` for each round i; the two lists must pair up. */
export function perRoundRatios(subject: readonly number[], baseline: readonly number[]): RoundRatios {
  if (subject.length !== baseline.length || subject.length === 0) {
    throw new RangeError(`per-round ratios need paired rounds (got ${subject.length} and ${baseline.length})`);
  }
  const perRound = subject.map((value, i) => value / baseline[i]!);
  return { perRound, min: Math.min(...perRound), median: median(perRound), max: Math.max(...perRound) };
}

/** A summary row whose value is the median per-round ratio, carrying the spread. */
export function roundRatioRow(name: string, subject: readonly number[], baseline: readonly number[],
  extra: { goal?: RatioRow['goal']; note?: string } = {}): RatioRow {
  const ratios = perRoundRatios(subject, baseline);
  return { name, value: ratios.median, rounds: { min: ratios.min, max: ratios.max, count: ratios.perRound.length }, ...extra };
}

/** The order of the targets in round `round`: every other round reversed, so drift hits all sides. */
export function roundOrder<T>(targets: readonly T[], round: number): readonly T[] {
  return round % 2 === 0 ? targets : [...targets].reverse();
}

/** A knob from the environment: a positive integer, else the default. */
export function positiveInt(text: string | undefined, fallback: number): number {
  const n = Number(text);
  return text !== undefined && Number.isInteger(n) && n > 0 ? n : fallback;
}
