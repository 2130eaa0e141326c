import type { DeviceQuery, FleetApi, HeartbeatRecord } from '../../../messages/fleet.js';
import type { TargetFilter } from '../../../shared/targeting/filter.js';
import { unpackHeartbeats } from '../../../messages/fleet-batch.js';
import { ReportLimiter, reportLimitCounter } from '../../../shared/report-limit.js';
import type { ActorContext } from '../../runtime.js';
import type { FleetDatabase } from '../database.js';
import type { Schedule } from '../schedule.js';
import { updateFailedEvents } from '../webhooks/device-events.js';
import type { Webhooks } from '../webhooks/webhooks.js';
import { createFleetMetrics } from './metrics.js';
import * as q from './queries.js';
import { writeBatch } from './store-of.js';
import { forgetTargeting, writeAttributes } from './targeting.js';
import { WriteBuffer } from './write-buffer.js';

// The inventory (docs/fleet.md): the front-ends' records buffered within fleet.buffer_mb and
// written every flush_interval (or at half the budget), the queries the admin routes and the
// rollout health checks read, and the retention that bounds the tables.
//
//   http, coap ──record(batch)──▶ WriteBuffer (fleet.buffer_mb) ──every flush_interval, or at half the budget──▶ devices, reports
//   http admin ──listDevices / device / summary──▶ queries          retention timer ──▶ prune
//   manifester ──rolloutHealth──▶ flush, then count

/** Attribute sets waiting for the flush, a few KiB each at most: past this many the oldest are dropped (the device sends its set again with its next heartbeat). */
const MAX_PENDING_ATTRIBUTES = 20_000;
/** The devices-per-version gauge is a scan of the inventory: refreshed now and then, not per scrape. */
const VERSION_GAUGE_MS = 30_000;

type InventoryApi = Pick<FleetApi, 'record' | 'summary' | 'recentReports' | 'rolloutHealth' | 'recordOffers' | 'flush'>;
/** Whether a record may enter the inventory (device identity's answer: not for a device rejected or deleted since). */
type Recordable = (deviceId: string, receivedAtMs: number) => boolean;

export interface Inventory {
  api: InventoryApi;
  /** Reads the devices-per-version gauge and the webhooks' (at start and when the database opens late). */
  refreshVersions(): Promise<void>;
  /** Starts the flush, retention and gauge timers. */
  start(): Promise<void>;
  /** The inventory's own rows of the devices, before device identity adds its own. */
  listDevices(query: DeviceQuery, filter?: TargetFilter): ReturnType<FleetApi['listDevices']>;
  deviceWithReports(id: string): ReturnType<typeof q.deviceWithReports>;
}

export function createInventory(ctx: ActorContext, database: FleetDatabase, schedule: Schedule, webhooks: Webhooks, recordable: Recordable): Inventory {
  const { fleet, retention } = ctx.config;
  const db = () => database.db();
  const buffer = new WriteBuffer(fleet.bufferBytes);
  // The front-ends refuse a device's excess reports each on its own transport; this one bucket per
  // device holds a device that sends over both to the same limit (src/shared/report-limit.ts).
  const reportLimit = new ReportLimiter({ burst: fleet.reportBurst, perMinute: fleet.reportsPerMinute });
  const reportLimited = reportLimitCounter(ctx.registry, 'fleet');
  const metrics = createFleetMetrics(ctx.registry, () => ({ bytes: buffer.bytes, budget: buffer.budgetBytes, dropped: buffer.dropped }));
  let flushing: Promise<void> | undefined;
  /** Whether the last flush was refused: then only the timer tries again, not every batch that arrives. */
  let refused = false;
  let defaultTrack = '';
  /** The latest attribute set per device since the last flush (a batch's sparse list, docs/rollouts.md "Attributes"). */
  let pendingAttributes = new Map<string, Readonly<Record<string, string>>>();

  /** The default track's key, for heartbeats that named none; the last one known if the manifester is away. */
  const resolveDefault = async (): Promise<string> => {
    try {
      const listing = await ctx.call('manifester', (m) => m.listTracks());
      defaultTrack = listing.default;
    } catch (err) {
      ctx.log.debug({ err }, 'default track unknown for now; keeping the last one');
    }
    return defaultTrack;
  };

  const flushOnce = async (): Promise<void> => {
    await flushRecords();
    // After the heartbeats, so a new device's row is there before its attributes.
    if (database.isOpen && pendingAttributes.size > 0) await flushAttributes();
  };

  const flushRecords = async (): Promise<void> => {
    if (!database.isOpen || (buffer.pendingHeartbeats === 0 && buffer.pendingReports === 0)) return;
    const taken = buffer.take();
    const started = Date.now();
    try {
      let heartbeats: HeartbeatRecord[] = taken.heartbeats;
      if (heartbeats.some((h) => h.artifact === '')) {
        const key = await resolveDefault();
        heartbeats = heartbeats.map((h) => (h.artifact === '' ? { ...h, artifact: key } : h));
      }
      // Into the outbox first: a flush that fails after it is retried and records them again
      // (at least once), where the other order could lose them.
      await webhooks.record(updateFailedEvents(taken.reports));
      await writeBatch(db(), heartbeats, taken.reports);
      refused = false;
      buffer.written(taken);
      const done = Date.now();
      const lags: number[] = [];
      for (const r of taken.heartbeats) lags.push((done - r.receivedAtMs) / 1000);
      for (const r of taken.reports) lags.push((done - r.receivedAtMs) / 1000);
      metrics.flushed(lags, (done - started) / 1000);
    } catch (err) {
      refused = true;
      metrics.flushFailed();
      buffer.putBack(taken);
      ctx.log.error({ err, heartbeats: taken.heartbeats.length, reports: taken.reports.length }, 'fleet flush failed; records kept for the next one');
    }
  };

  /** Apart from the heartbeats' write: a failure here keeps the sets for the next flush and costs the heartbeats nothing. */
  const flushAttributes = async (): Promise<void> => {
    const taken = pendingAttributes;
    pendingAttributes = new Map();
    try {
      await writeAttributes(db(), [...taken].map(([deviceId, attributes]) => ({ deviceId, attributes })));
    } catch (err) {
      for (const [id, set] of taken) if (!pendingAttributes.has(id)) pendingAttributes.set(id, set);
      ctx.log.error({ err, devices: taken.size }, 'device attributes not written; kept for the next flush');
    }
  };

  /** One flush at a time; a caller during a flush waits for it and then flushes what came since. */
  const flush = async (): Promise<void> => {
    while (flushing) await flushing;
    flushing = flushOnce().finally(() => (flushing = undefined));
    return flushing;
  };

  const refreshVersions = async () => {
    const current = database.current();
    if (current) metrics.setVersionCounts(await q.versionCounts(current));
    await webhooks.refreshMetrics();
  };

  return {
    refreshVersions,
    listDevices: (query, filter) => q.listDevices(db(), query, filter),
    deviceWithReports: (id) => q.deviceWithReports(db(), id),
    async start() {
      schedule.every(fleet.flushIntervalMs, 'fleet flush', flush);
      // Fleet retention runs on the retention schedule whether or not file retention is enabled:
      // it is what bounds the database on disk under a flood of invented device ids.
      schedule.every(retention.intervalMs, 'fleet retention', async () => {
        const now = Date.now();
        const devicesBefore = fleet.deviceMaxAgeMs > 0 ? Math.floor((now - fleet.deviceMaxAgeMs) / 1000) : undefined;
        const reportsBefore = fleet.reportMaxAgeMs > 0 ? Math.floor((now - fleet.reportMaxAgeMs) / 1000) : undefined;
        const current = database.current();
        if (!current) return;
        const removed = await q.prune(current, devicesBefore, reportsBefore);
        if (removed.devices > 0) await forgetTargeting(current, 'orphans');
        metrics.pruned(removed.devices, removed.reports);
        const events = await webhooks.prune(now);
        ctx.log.info({ ...removed, webhook_events: events }, 'fleet retention done');
      });
      await refreshVersions();
      schedule.every(VERSION_GAUGE_MS, 'fleet version gauge', refreshVersions);
    },
    api: {
      record(batch) {
        if (schedule.stopped) return;
        unpackHeartbeats(batch.heartbeats, (h) => {
          if (recordable(h.deviceId, h.receivedAtMs)) buffer.addHeartbeat(h);
        });
        for (const a of batch.attributes ?? []) {
          if (!recordable(a.deviceId, Date.now())) continue;
          pendingAttributes.delete(a.deviceId);
          pendingAttributes.set(a.deviceId, a.attributes);
          if (pendingAttributes.size > MAX_PENDING_ATTRIBUTES) pendingAttributes.delete(pendingAttributes.keys().next().value!);
        }
        for (const r of batch.reports) {
          if (!recordable(r.deviceId, r.receivedAtMs)) continue;
          if (reportLimit.take(r.deviceId, r.receivedAtMs) === 0) buffer.addReport(r);
          else reportLimited();
        }
        // A burst that fills half the budget before the timer is written at once rather than
        // left to reach the budget, where last_seen updates start to be dropped.
        if (!flushing && !refused && buffer.bytes >= buffer.budgetBytes / 2) {
          flush().catch((err) => ctx.log.error({ err }, 'fleet flush failed'));
        }
      },
      summary: (artifact) => q.summary(db(), artifact, Date.now()),
      recentReports: (query) => q.recentReports(db(), query),
      async rolloutHealth(queries) {
        await flush();
        return q.rolloutHealth(db(), queries);
      },
      recordOffers(offers) {
        // Lost offers cost only counts (the manifester sends each again within minutes), never an answer.
        const current = database.current();
        if (schedule.stopped || !current) return;
        q.recordOffers(current, offers).catch((err) => ctx.log.warn({ err, offers: offers.length }, 'rollout offers not recorded'));
      },
      flush,
    },
  };
}
