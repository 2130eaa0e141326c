import { CONTROL_DEADLINES_MS, type ControlApi, type Deadlines } from './lifecycle.js';

/** What one retention sweep removed (the answer of POST /admin/gc). */
export interface SweepResult {
  removed: { deltas: number; full: number; binaries: number };
  bytes_freed: number;
  /** Files left alone because their names are not derived-file names. */
  ignored: number;
  duration_ms: number;
}

export interface SweeperApi extends ControlApi {
  /** Runs a sweep now (or joins the one under way) and answers what it removed. */
  sweep(): Promise<SweepResult>;
}

export const SWEEPER_DEADLINES_MS = {
  ...CONTROL_DEADLINES_MS,
  /** A sweep of a large store lists and deletes many files. */
  sweep: 30 * 60_000,
} as const satisfies Deadlines<SweeperApi>;
