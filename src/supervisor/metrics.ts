import { AggregatorRegistry, Counter, Registry, collectDefaultMetrics } from 'prom-client';
import { startGarbageCollector } from '../shared/garbage-collector.js';
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

  private readonly startFailures = new Counter({
    name: 'updater_actor_start_failures_total',
    help: 'Restarts of a crashed actor that failed to start it, by error code (DATABASE_UNREACHABLE is tried again until the database is back)',
    labelNames: ['actor', 'code'],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'updater_' });
    registerRuntimeMetrics(this.registry, 'supervisor');
    startGarbageCollector(this.registry, 'supervisor');
  }

  restarted(actor: string): void {
    this.restarts.inc({ actor });
  }

  startFailed(actor: string, code: string): void {
    this.startFailures.inc({ actor, code });
  }

  async render(actorMetrics: unknown[][]): Promise<string> {
    const own = await this.registry.getMetricsAsJSON();
    const merged = AggregatorRegistry.aggregate([own, ...actorMetrics].map((metrics) => metrics.map(withoutGaugeTotal)) as never);
    return merged.metrics();
  }
}

/**
 * prom-client's default gauges `nodejs_active_{handles,requests,resources}_total` break the
 * naming rule that only counters end in `_total` (`promtool check metrics` exits 3 on them),
 * so they are published without the suffix: `updater_nodejs_active_handles` and so on.
 */
function withoutGaugeTotal(metric: unknown): unknown {
  const m = metric as { type?: string; name?: string };
  if (m.type === 'gauge' && m.name?.endsWith('_total')) return { ...m, name: m.name.slice(0, -'_total'.length) };
  return metric;
}
