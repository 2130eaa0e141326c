/** What one retention sweep removed (spec 3.3); the answer of `POST /admin/gc`. */
export interface SweepResult {
  deltas_removed: number;
  full_removed: number;
  binaries_removed: number;
  bytes_removed: number;
}
