import { Counter, Gauge, type Registry } from 'prom-client';
import { FastHistogram } from '../../../shared/fast-histogram.js';
import type { DropReason } from './write-buffer.js';

/** Versions shown per track in the gauge; the rest are summed under version_hash="other". */
const TOP_VERSIONS = 20;

export interface FleetMetrics {
  /** Seconds from a front-end's receipt of each record to the commit that wrote it. */
  flushed(lagsSeconds: readonly number[], durationSeconds: number): void;
  flushFailed(): void;
  setVersionCounts(rows: readonly { artifact: string; version_hash: string; devices: number }[]): void;
  pruned(devices: number, reports: number): void;
}

export function createFleetMetrics(registry: Registry, read: () => { bytes: number; budget: number; dropped: Record<DropReason, number> }): FleetMetrics {
  const lag = new FastHistogram('updater_fleet_flush_lag_seconds', 'Time from a heartbeat or report reaching the server to its write in the fleet database',
    [0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30, 60], registry);
  const observeLag = lag.recorder('', {});
  const flushSeconds = new FastHistogram('updater_fleet_flush_seconds', 'Duration of one batched write to the fleet database',
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registry);
  const observeFlush = flushSeconds.recorder('', {});
  const failures = new Counter({ name: 'updater_fleet_flush_failures_total', help: 'Flushes the database refused; their records were kept for the next one', registers: [registry] });
  const prunedTotal = new Counter({ name: 'updater_fleet_pruned_total', help: 'Devices and reports deleted by fleet retention', labelNames: ['kind'], registers: [registry] });
  new Gauge({
    name: 'updater_fleet_buffer_bytes', help: 'Bytes of inventory records waiting to be written, and the budget (fleet.buffer_mb)', labelNames: ['kind'], registers: [registry],
    collect() {
      const now = read();
      this.set({ kind: 'used' }, now.bytes);
      this.set({ kind: 'budget' }, now.budget);
    },
  });
  new Counter({
    name: 'updater_fleet_dropped_updates_total', help: 'Inventory records dropped because the write buffer was full, by kind', labelNames: ['reason'], registers: [registry],
    collect() {
      const { dropped } = read();
      this.reset();
      for (const [reason, n] of Object.entries(dropped)) this.inc({ reason }, n);
    },
  });
  const devices = new Gauge({ name: 'updater_fleet_devices', help: 'Devices in the inventory by track and version hash (largest versions of each track; the rest as "other")', labelNames: ['artifact', 'version_hash'], registers: [registry] });

  return {
    flushed(lags, duration) {
      for (const l of lags) observeLag(l);
      observeFlush(duration);
    },
    flushFailed: () => failures.inc(),
    setVersionCounts(rows) {
      devices.reset();
      const byTrack = new Map<string, { version_hash: string; devices: number }[]>();
      for (const r of rows) byTrack.set(r.artifact, [...(byTrack.get(r.artifact) ?? []), r]);
      for (const [artifact, versions] of byTrack) {
        versions.sort((a, b) => b.devices - a.devices);
        versions.slice(0, TOP_VERSIONS).forEach((v) => devices.set({ artifact, version_hash: v.version_hash }, v.devices));
        const rest = versions.slice(TOP_VERSIONS).reduce((sum, v) => sum + v.devices, 0);
        if (rest > 0) devices.set({ artifact, version_hash: 'other' }, rest);
      }
    },
    pruned(d, r) {
      prunedTotal.inc({ kind: 'devices' }, d);
      prunedTotal.inc({ kind: 'reports' }, r);
    },
  };
}
