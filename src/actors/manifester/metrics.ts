import { Gauge, type Registry } from 'prom-client';
import { createDecisionCounters, type DecisionCounters } from '../../shared/decision/counters.js';

/** The decision counters (shared with the front-ends, which answer from snapshots). */
export type ManifesterMetrics = DecisionCounters;

/** What the rollout gauges read at each scrape. */
export interface RolloutGaugeSource {
  (): readonly { artifact: string; percent: number; state: string }[];
}

const ROLLOUT_STATES = ['scheduled', 'running', 'paused', 'complete', 'aborted'] as const;

export function createManifesterMetrics(registry: Registry, cacheSize: () => number, rollouts: RolloutGaugeSource): ManifesterMetrics {
  const counters = createDecisionCounters(registry);
  new Gauge({
    name: 'updater_signed_manifest_cache_entries',
    help: 'Entries held by the signed-manifest LRU (manifest.cache_size)',
    registers: [registry],
    collect() {
      this.set(cacheSize());
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
  return counters;
}
