import { AggregatorRegistry, Counter, Registry, collectDefaultMetrics } from 'prom-client';
import { registerRuntimeMetrics } from '../shared/runtime-metrics.js';

// The supervisor owns the process-wide metrics (RSS, event loop, restarts) and merges every
// actor's registry into one Prometheus page: counters of the same name and labels add up.

export class SupervisorMetrics {
  readonly registry = new Registry();
  private readonly restarts = new Counter({
    name: 'updater_actor_restarts_total',
    help: 'Actors restarted after a crash',
    labelNames: ['actor'],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'updater_' });
    registerRuntimeMetrics(this.registry, 'supervisor');
  }

  restarted(actor: string): void {
    this.restarts.inc({ actor });
  }

  async render(actorMetrics: unknown[][]): Promise<string> {
    const own = await this.registry.getMetricsAsJSON();
    const merged = AggregatorRegistry.aggregate([own, ...actorMetrics] as never);
    return merged.metrics();
  }
}
