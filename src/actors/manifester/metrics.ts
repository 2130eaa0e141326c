import { Counter, Gauge, type Registry } from 'prom-client';

export interface ManifesterMetrics {
  served(mode: 'delta' | 'full'): void;
  decided(row: number): void;
}

export function createManifesterMetrics(registry: Registry, cacheSize: () => number): ManifesterMetrics {
  const served = new Counter({
    name: 'updater_deltas_served_total',
    help: 'Signed, actionable manifests served, by transfer mode',
    labelNames: ['mode'],
    registers: [registry],
  });
  const decisions = new Counter({
    name: 'updater_manifest_decisions_total',
    help: 'Heartbeats answered, by row of the decision table (spec 3.1)',
    labelNames: ['row'],
    registers: [registry],
  });
  new Gauge({
    name: 'updater_signed_manifest_cache_entries',
    help: 'Entries held by the signed-manifest LRU (manifest.cache_size)',
    registers: [registry],
    collect() {
      this.set(cacheSize());
    },
  });
  // Both modes are present from the start, so a dashboard sees zeros rather than nothing.
  served.inc({ mode: 'delta' }, 0);
  served.inc({ mode: 'full' }, 0);
  return {
    served: (mode) => served.inc({ mode }),
    decided: (row) => decisions.inc({ row: String(row) }),
  };
}
