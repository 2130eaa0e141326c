import { Counter, type Registry } from 'prom-client';
import { plainCounter } from '../plain-counter.js';
import type { Route } from './route.js';

// The counters of heartbeat decisions. Both the manifester and each front-end decide (the
// front-ends from the manifester's snapshot), so each registers these in its own registry and
// the supervisor adds them up by name (src/supervisor/metrics.ts): one figure per row, whoever
// answered. Counted in plain numbers on the heartbeat path and handed to prom-client only
// when /metrics is scraped: a labelled inc() hashes and validates its labels every time, which
// on the busiest path costs more than the decision it counts.

export interface DecisionCounters {
  served(mode: 'delta' | 'full'): void;
  decided(row: number): void;
  /** A heartbeat on a track with an unfinished rollout, by the target it was sent toward. */
  routed(route: Route): void;
}

export function createDecisionCounters(registry: Registry): DecisionCounters {
  const servedCounts = plainCounter(registry, {
    name: 'updater_deltas_served_total', help: 'Signed, actionable manifests served, by transfer mode', label: 'mode', values: ['delta', 'full'],
  });
  const routeCounts = plainCounter(registry, {
    name: 'updater_rollout_answers_total',
    help: 'Heartbeats on tracks with an unfinished rollout, by the target they were answered toward (stay: a replaced rollout\'s target, kept; wait: outside the maintenance window)',
    label: 'route',
    values: ['target', 'stable', 'stay', 'wait'],
  });
  const rowCounts = new Array<number>(8).fill(0);
  const flushed = { rows: new Array<number>(8).fill(0) };
  new Counter({
    name: 'updater_manifest_decisions_total',
    help: 'Heartbeats answered, by row of the decision table (src/shared/decision/decide.ts)',
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
  return {
    served: (mode) => servedCounts[mode]++,
    decided: (row) => rowCounts[row]!++,
    routed: (route) => routeCounts[route]++,
  };
}
