import { Counter, type Registry } from 'prom-client';
import type { SweepResult } from '../../messages/sweeper.js';

export function createSweeperMetrics(registry: Registry): { swept(result: SweepResult): void } {
  const sweeps = new Counter({ name: 'updater_retention_sweeps_total', help: 'Retention sweeps run', registers: [registry] });
  const removed = new Counter({
    name: 'updater_retention_removed_total',
    help: 'Files removed by retention, by kind',
    labelNames: ['kind'],
    registers: [registry],
  });
  const bytes = new Counter({ name: 'updater_retention_bytes_freed_total', help: 'Bytes freed by retention', registers: [registry] });
  return {
    swept(result) {
      sweeps.inc();
      removed.inc({ kind: 'delta' }, result.removed.deltas);
      removed.inc({ kind: 'full' }, result.removed.full);
      removed.inc({ kind: 'binary' }, result.removed.binaries);
      bytes.inc(result.bytes_freed);
    },
  };
}
