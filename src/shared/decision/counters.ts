import { Counter, type Registry } from 'prom-client';
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
  const servedCounts = { delta: 0, full: 0 };
  const routeCounts = { target: 0, stable: 0, stay: 0, wait: 0 };
  const flushedRoutes = { target: 0, stable: 0, stay: 0, wait: 0 };
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
  new Counter({
    name: 'updater_rollout_answers_total',
    help: 'Heartbeats on tracks with an unfinished rollout, by the target they were answered toward (stay: a replaced rollout\'s target, kept; wait: outside the maintenance window)',
    labelNames: ['route'],
    registers: [registry],
    collect() {
      for (const route of ['target', 'stable', 'stay', 'wait'] as const) {
        this.inc({ route }, routeCounts[route] - flushedRoutes[route]);
        flushedRoutes[route] = routeCounts[route];
      }
    },
  });
  return {
    served: (mode) => servedCounts[mode]++,
    decided: (row) => rowCounts[row]!++,
    routed: (route) => routeCounts[route]++,
  };
}
