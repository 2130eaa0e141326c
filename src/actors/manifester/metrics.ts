import { Counter, Gauge, type Registry } from 'prom-client';

export interface ManifesterMetrics {
  served(mode: 'delta' | 'full'): void;
  decided(row: number): void;
  /** A heartbeat on a track with an unfinished rollout, by the target it was sent toward. */
  routed(route: 'target' | 'stable' | 'stay'): void;
}

/** What the rollout gauges read at each scrape. */
export interface RolloutGaugeSource {
  (): readonly { artifact: string; percent: number; state: string }[];
}

const ROLLOUT_STATES = ['scheduled', 'running', 'paused', 'complete', 'aborted'] as const;

/**
 * Counted in plain numbers on the heartbeat path and handed to prom-client only when
 * /metrics is scraped: a labelled inc() hashes and validates its labels every time, which
 * on the busiest path costs more than the decision it counts.
 */
export function createManifesterMetrics(registry: Registry, cacheSize: () => number, rollouts: RolloutGaugeSource): ManifesterMetrics {
  const servedCounts = { delta: 0, full: 0 };
  const routeCounts = { target: 0, stable: 0, stay: 0 };
  const flushedRoutes = { target: 0, stable: 0, stay: 0 };
  const rowCounts = new Array<number>(8).fill(0);
  const flushed = { delta: 0, full: 0, rows: new Array<number>(8).fill(0) };
  new Counter({
    name: 'updater_deltas_served_total',
    help: 'Signed, actionable manifests served, by transfer mode',
    labelNames: ['mode'],
    registers: [registry],
    collect() {
      // Both modes are present from the start, so a dashboard sees zeros rather than nothing.
      for (const mode of ['delta', 'full'] as const) {
        this.inc({ mode }, servedCounts[mode] - flushed[mode]);
        flushed[mode] = servedCounts[mode];
      }
    },
  });
  new Counter({
    name: 'updater_manifest_decisions_total',
    help: 'Heartbeats answered, by row of the decision table (decide.ts)',
    labelNames: ['row'],
    registers: [registry],
    collect() {
      for (let row = 1; row <= 7; row++) {
        if (rowCounts[row] === flushed.rows[row]) continue;
        this.inc({ row: String(row) }, rowCounts[row]! - flushed.rows[row]!);
        flushed.rows[row] = rowCounts[row]!;
      }
    },
  });
  new Gauge({
    name: 'updater_signed_manifest_cache_entries',
    help: 'Entries held by the signed-manifest LRU (manifest.cache_size)',
    registers: [registry],
    collect() {
      this.set(cacheSize());
    },
  });
  new Counter({
    name: 'updater_rollout_answers_total',
    help: 'Heartbeats on tracks with an unfinished rollout, by the target they were answered toward (stay: a replaced rollout\'s target, kept)',
    labelNames: ['route'],
    registers: [registry],
    collect() {
      for (const route of ['target', 'stable', 'stay'] as const) {
        this.inc({ route }, routeCounts[route] - flushedRoutes[route]);
        flushedRoutes[route] = routeCounts[route];
      }
    },
  });
  new Gauge({
    name: 'updater_rollout_percent',
    help: 'Percent of devices in the staged rollout of each track that has one',
    labelNames: ['artifact'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of rollouts()) this.set({ artifact: r.artifact }, r.percent);
    },
  });
  new Gauge({
    name: 'updater_rollout_state',
    help: 'State of the staged rollout of each track that has one: 1 for its current state, 0 for the others',
    labelNames: ['artifact', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of rollouts()) for (const state of ROLLOUT_STATES) this.set({ artifact: r.artifact, state }, r.state === state ? 1 : 0);
    },
  });
  return {
    served: (mode) => servedCounts[mode]++,
    decided: (row) => rowCounts[row]!++,
    routed: (route) => routeCounts[route]++,
  };
}
