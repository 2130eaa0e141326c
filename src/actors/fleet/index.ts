import type { FleetApi, HeartbeatRecord } from '../../messages/fleet.js';
import { engineOf, openDatabase, redactDatabaseUrl } from '../../shared/database/connect.js';
import { UpdaterError } from '../../shared/errors.js';
import { unpackHeartbeats } from '../../messages/fleet-batch.js';
import { runActor, type OwnApi } from '../runtime.js';
import { createFleetMetrics } from './metrics.js';
import * as q from './fleet-queries.js';
import { writeBatch } from './fleet-store-of.js';
import { WriteBuffer } from './write-buffer.js';
import { startDeviceIdentity } from './device-identity.js';
import { AuditLog, auditWriteError } from './audit.js';
import { OperatorTokenTable } from './operator-tokens.js';
import { updateFailedEvents } from './webhooks/device-events.js';
import { Webhooks } from './webhooks/webhooks.js';
import { ReportLimiter, reportLimitCounter } from '../../shared/report-limit.js';

// The fleet actor: the only holder of the database connection.
//
//   http, coap ──record(batch)──▶ WriteBuffer (fleet.buffer_mb) ──every flush_interval, or at half the budget──▶ devices, reports
//   http admin ──listDevices / device / summary──▶ queries          retention timer ──▶ prune
//   manifester ──rolloutHealth──▶ flush, then count
//   http admin ──tokens, audit──▶ operator-tokens.ts, audit.ts (docs/operations.md)

/** The devices-per-version gauge is a scan of the inventory: refreshed now and then, not per scrape. */
const VERSION_GAUGE_MS = 30_000;
/** How often an embedded database that could not be opened (store full or read-only) is tried again. */
const REOPEN_MS = 5_000;

await runActor(async (ctx) => {
  const { fleet, retention } = ctx.config;
  let store: Awaited<ReturnType<typeof openDatabase>> | undefined;
  /** Why the database could not be opened, while it is not: what a change refused for want of its audit row says. */
  let openError: unknown = new Error('the fleet database is not open yet');
  const open = async () => {
    try {
      store = await openDatabase(ctx.config.database);
    } catch (err) {
      openError = err;
      throw err;
    }
    ctx.log.info({ engine: store.engine, database: redactDatabaseUrl(ctx.config.database) }, 'fleet database open');
  };
  /** One attempt at a time, from the retry timer or a change that needs its audit row now. */
  let opening: Promise<void> | undefined;
  const reopen = () => (opening ??= open().finally(() => (opening = undefined)));
  /** The open database; while there is none, admin queries answer DATABASE_UNREACHABLE. */
  const db = () => {
    if (!store) throw new UpdaterError('DATABASE_UNREACHABLE', 'the fleet database is not open (the store is full or read-only); retrying', { key: 'database' });
    return store.db;
  };
  const webhooks = new Webhooks(ctx.config, () => store?.db, ctx.registry, ctx.log);
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
  let stopped = false;
  const timers = new Set<NodeJS.Timeout>();
  /** A timer drain clears; it forgets itself once it fires (a list of every timer ever set grew by one a flush). */
  const later = (ms: number, fn: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  };

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
    if (!store || (buffer.pendingHeartbeats === 0 && buffer.pendingReports === 0)) return;
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

  /** One flush at a time; a caller during a flush waits for it and then flushes what came since. */
  const flush = async (): Promise<void> => {
    while (flushing) await flushing;
    flushing = flushOnce().finally(() => (flushing = undefined));
    return flushing;
  };

  /** `fn` every `ms` from start to start (at once after a run that took longer), never two runs at a time. */
  const every = (ms: number, what: string, fn: () => Promise<void>) => {
    const run = () => {
      if (stopped) return;
      const started = Date.now();
      fn().catch((err) => ctx.log.error({ err }, `${what} failed`)).finally(() => {
        if (!stopped) later(Math.max(0, ms - (Date.now() - started)), run);
      });
    };
    later(ms, run);
  };

  // A PostgreSQL URL that cannot be reached stops the start (exit 2, naming the key). The
  // embedded file lives in the store: when the store is full or read-only the server must still
  // start and serve devices (they never wait for the inventory), so the fleet actor starts
  // without it, keeps buffering within its budget, and opens it once the store recovers.
  try {
    await open();
  } catch (err) {
    // A cluster cannot serve without its database; with devices.auth on, the token key lives
    // there too: no device could be let in without it.
    if (ctx.config.cluster || ctx.config.devices.auth === 'on') throw err;
    ctx.log.error({ err }, 'fleet database cannot be opened: serving devices without the inventory, retrying every 5 s');
    const retry = () => {
      if (stopped || store) return;
      reopen().then(() => refreshVersions(), () => later(REOPEN_MS, retry));
    };
    later(REOPEN_MS, retry);
  }
  every(fleet.flushIntervalMs, 'fleet flush', flush);
  // Fleet retention runs on the retention schedule whether or not file retention is enabled:
  // it is what bounds the database on disk under a flood of invented device ids.
  every(retention.intervalMs, 'fleet retention', async () => {
    const now = Date.now();
    const devicesBefore = fleet.deviceMaxAgeMs > 0 ? Math.floor((now - fleet.deviceMaxAgeMs) / 1000) : undefined;
    const reportsBefore = fleet.reportMaxAgeMs > 0 ? Math.floor((now - fleet.reportMaxAgeMs) / 1000) : undefined;
    if (!store) return;
    const removed = await q.prune(store.db, devicesBefore, reportsBefore);
    metrics.pruned(removed.devices, removed.reports);
    const events = await webhooks.prune(now);
    ctx.log.info({ ...removed, webhook_events: events }, 'fleet retention done');
  });
  const refreshVersions = async () => {
    if (store) metrics.setVersionCounts(await q.versionCounts(store.db));
    await webhooks.refreshMetrics();
  };
  await refreshVersions();
  every(VERSION_GAUGE_MS, 'fleet version gauge', refreshVersions);
  webhooks.start();
  const identity = await startDeviceIdentity(ctx, db, every, (id) => q.deviceWithReports(db(), id), (events, tx) => webhooks.record(events, tx));

  // Operator tokens and the audit log: read when the database is open (or, if it is not yet,
  // whenever the front-end asks for the table).
  const tokens = new OperatorTokenTable(db, engineOf(ctx.config.database), ctx.log);
  await tokens.start(ctx.config.database);
  const audit = new AuditLog(db, ctx.log);
  const { auditMaxAgeMs } = ctx.config.admin;
  if (auditMaxAgeMs > 0) {
    every(retention.intervalMs, 'audit retention', async () => {
      if (!store) return;
      const removed = await audit.prune(Math.floor((Date.now() - auditMaxAgeMs) / 1000));
      if (removed > 0) ctx.log.info({ removed }, 'audit retention done');
    });
  }

  return {
    record(batch) {
      if (stopped) return;
      unpackHeartbeats(batch.heartbeats, (h) => {
        if (identity.recordable(h.deviceId, h.receivedAtMs)) buffer.addHeartbeat(h);
      });
      for (const r of batch.reports) {
        if (!identity.recordable(r.deviceId, r.receivedAtMs)) continue;
        if (reportLimit.take(r.deviceId, r.receivedAtMs) === 0) buffer.addReport(r);
        else reportLimited();
      }
      // A burst that fills half the budget before the timer is written at once rather than
      // left to reach the budget, where last_seen updates start to be dropped.
      if (!flushing && !refused && buffer.bytes >= buffer.budgetBytes / 2) {
        flush().catch((err) => ctx.log.error({ err }, 'fleet flush failed'));
      }
    },
    listDevices: (query) => identity.listDevices(query, () => q.listDevices(db(), query)),
    device: (id) => identity.device(id, () => q.deviceWithReports(db(), id)),
    ...identity.api,
    async deleteDevice(deviceId) {
      // What is buffered for the device is written first, so that the delete removes it too.
      await flush();
      return identity.api.deleteDevice(deviceId);
    },
    summary: (artifact) => q.summary(db(), artifact, Date.now()),
    recentReports: (query) => q.recentReports(db(), query),
    async rolloutHealth(queries) {
      await flush();
      return q.rolloutHealth(db(), queries);
    },
    recordOffers(offers) {
      // Lost offers cost only counts (the manifester sends each again within minutes), never an answer.
      if (stopped || !store) return;
      q.recordOffers(store.db, offers).catch((err) => ctx.log.warn({ err, offers: offers.length }, 'rollout offers not recorded'));
    },
    flush,
    createToken: (entry) => tokens.create(entry),
    listTokens: () => tokens.list(),
    revokeToken: (id) => tokens.revoke(id),
    operatorTokens: (known) => tokens.snapshot(known),
    audit(records) {
      if (!stopped) audit.append(records);
    },
    auditBegin(record) {
      if (stopped) return Promise.reject(new UpdaterError('SHUTTING_DOWN'));
      // A change does not wait for the retry timer: the disk may have come back a moment ago.
      if (!store) return reopen().then(() => audit.begin(record), () => Promise.reject(auditWriteError(openError)));
      return audit.begin(record);
    },
    auditEnd(id, status, detail) {
      if (!stopped) audit.end(id, status, detail);
    },
    listAudit: (query) => audit.list(query),
    recordEvents: (events) => webhooks.record(events),
    webhookState: () => webhooks.state(),
    async drain() {
      stopped = true;
      identity.stop();
      for (const t of timers) clearTimeout(t);
      await webhooks.stop();
      await flush();
      await audit.settled();
      audit.close();
      await tokens.close();
      await store?.close();
    },
  } satisfies OwnApi<FleetApi>;
});
