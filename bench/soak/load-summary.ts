import { LatencyHistogram, type LatencySummary } from '../../src/load/latency.js';
import type { LoadReport } from '../../src/load/run.js';
import { saturationReasons, type HarnessLoad } from '../../src/load/saturation.js';

// The plateau reports of every load process merged into one: latency by kind from the merged
// histograms, counts added up, and each process's own saturation kept apart.

export interface LoadSummary {
  readonly heartbeatsPerSecond: number;
  readonly heartbeats: number;
  readonly downloads: number;
  /** Updates installed, and updates the failing share reported as failed (rolled back). */
  readonly updatesApplied: number;
  readonly updatesFailed: number;
  /** Deltas offered by patch format (`bsdiff40`, `bsdiff-lzma`): the soak wants both in the hot cache. */
  readonly deltaOffers: Record<string, number>;
  readonly latency: Record<string, LatencySummary>;
  readonly errors: Record<string, number>;
  readonly harness: readonly HarnessLoad[];
  /** Why the load processes count as saturated (the run is then invalid). */
  readonly saturation: readonly string[];
  /** What the server got wrong under this load: failed requests, load it could not take. */
  readonly failures: readonly string[];
}

/** The load's outcome for a delta offered, followed by its format (agent/load/run.ts). */
const DELTA_OFFERED = 'delta_offered_';
/** Failed requests or requests the schedule could not send, as a share of those sent. */
const ALLOWED_FAILURE_SHARE = 0.001;

/**
 * `formats`: the patch formats the plateau must have served deltas in (half the simulated
 * fleet names bsdiff-lzma first, half names none: agent/load/fleet.ts).
 */
export function summarizeLoad(reports: readonly LoadReport[], formats: readonly string[]): LoadSummary {
  const kinds = new Map<string, LatencyHistogram>();
  const errors: Record<string, number> = {};
  const deltaOffers: Record<string, number> = {};
  let heartbeats = 0;
  let downloads = 0;
  let updatesApplied = 0;
  let updatesFailed = 0;
  let requests = 0;
  let seconds = 0;
  for (const r of reports) {
    for (const [kind, record] of Object.entries(r.latency_records)) {
      if (!kinds.has(kind)) kinds.set(kind, new LatencyHistogram());
      kinds.get(kind)!.add(record);
    }
    for (const [kind, n] of Object.entries(r.errors)) errors[kind] = (errors[kind] ?? 0) + n;
    for (const [kind, n] of Object.entries(r.outcomes)) {
      if (kind.startsWith(DELTA_OFFERED)) deltaOffers[kind.slice(DELTA_OFFERED.length)] = (deltaOffers[kind.slice(DELTA_OFFERED.length)] ?? 0) + n;
    }
    heartbeats += r.heartbeats;
    downloads += r.downloads;
    updatesApplied += r.updates_applied;
    updatesFailed += r.updates_failed;
    requests += r.requests_per_second * r.seconds;
    seconds = Math.max(seconds, r.seconds);
  }
  const saturation = reports.flatMap((r, i) => saturationReasons(`load process ${i}`, r.harness));
  const failures: string[] = [];
  const notSent = reports.reduce((n, r) => n + r.harness.not_sent, 0);
  const sent = reports.reduce((n, r) => n + r.harness.sent, 0);
  if (notSent > ALLOWED_FAILURE_SHARE * (sent + notSent)) failures.push(`the server fell behind: ${notSent} of ${sent + notSent} scheduled heartbeats could not be sent (every device busy or ${reports.length} × 1024 requests in flight)`);
  const failed = Object.entries(errors).filter(([k]) => k !== 'client_saturated').reduce((n, [, v]) => n + v, 0);
  if (failed > ALLOWED_FAILURE_SHARE * requests) failures.push(`${failed} of ${Math.round(requests)} requests failed: ${JSON.stringify(errors)}`);
  if (reports.length === 0) failures.push('no load process reported');
  const missing = formats.filter((f) => !deltaOffers[f]);
  if (reports.length > 0 && missing.length > 0) failures.push(`no delta was offered in ${missing.join(' or ')} (offers: ${JSON.stringify(deltaOffers)}): the cache never held both formats`);
  return {
    heartbeatsPerSecond: seconds > 0 ? heartbeats / seconds : 0,
    heartbeats,
    downloads,
    updatesApplied,
    updatesFailed,
    deltaOffers,
    latency: Object.fromEntries([...kinds].map(([k, h]) => [k, h.summary()])),
    errors,
    harness: reports.map((r) => r.harness),
    saturation,
    failures,
  };
}
