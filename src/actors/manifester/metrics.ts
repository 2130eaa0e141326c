import { Counter, Gauge, type Registry } from 'prom-client';

export interface ManifesterMetrics {
  served(mode: 'delta' | 'full'): void;
  decided(row: number): void;
}

/**
 * Counted in plain numbers on the heartbeat path and handed to prom-client only when
 * /metrics is scraped: a labelled inc() hashes and validates its labels every time, which
 * on the busiest path costs more than the decision it counts.
 */
export function createManifesterMetrics(registry: Registry, cacheSize: () => number): ManifesterMetrics {
  const servedCounts = { delta: 0, full: 0 };
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
    help: 'Heartbeats answered, by row of the decision table (spec 3.1)',
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
  return {
    served: (mode) => servedCounts[mode]++,
    decided: (row) => rowCounts[row]!++,
  };
}
