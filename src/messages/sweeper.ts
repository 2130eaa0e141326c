import type { ControlApi } from './lifecycle.js';

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
