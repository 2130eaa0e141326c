import { Histogram, type Registry } from 'prom-client';
import type { DeliveryObserver } from '../../../shared/long-poll.js';

// How long a change takes to reach every front-end's decision snapshot: from the first change
// a snapshot carries to the last front-end's acknowledgement of it (src/shared/long-poll.ts). The
// documented bound is 100 ms (docs/architecture.md, "The heartbeat path").

export function snapshotDeliveryHistogram(registry: Registry): DeliveryObserver {
  const histogram = new Histogram({
    name: 'updater_decision_snapshot_delivery_seconds',
    help: 'From a change of what the decision snapshot carries to every front-end holding it',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  return (seconds) => histogram.observe(seconds);
}
