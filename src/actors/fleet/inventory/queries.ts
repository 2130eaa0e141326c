import type { Kysely, Selectable } from 'kysely';
import type { Transport } from '../../../messages/admin-wire.js';
import type { DevicePage, DeviceQuery, DeviceView, FleetReportView, FleetSummary, OfferRecord, ReportQuery, ReportView, RolloutHealth, RolloutHealthQuery } from '../../../messages/fleet.js';
import { recountVersions } from '../../../shared/database/connect.js';
import type { Database, DevicesTable, ReportsTable } from '../../../shared/database/schema.js';
import type { TargetFilter } from '../../../shared/targeting/filter.js';
import { EVERY, filterCondition } from './targeting.js';

// Every query of the inventory, written once for both engines: only portable SQL (no engine
// functions). The one exception is the flush, the hot write, in store.ts.

export { writeBatch } from './store-of.js';

export const DEVICE_REPORTS_SHOWN = 50;
const DAY_SECONDS = 86_400;

const seconds = (ms: number) => Math.floor(ms / 1000);

export function deviceView(row: Selectable<DevicesTable>): DeviceView {
  return {
    device_id: row.device_id,
    artifact: row.artifact,
    version_hash: row.version_hash,
    version: row.version,
    hw_info: { arch: row.hw_arch, os: row.hw_os, free_ram: row.hw_free_ram, free_disk: row.hw_free_disk },
    // The column is text, written only from a heartbeat's transport (store-*.ts).
    transport: row.transport as Transport,
    first_seen: row.first_seen,
    last_seen: row.last_seen,
    last_report: row.last_report_at === null
      ? null
      : { success: row.last_report_success === 1, new_hash: row.last_report_new_hash ?? '', rollback_reason: row.last_report_reason ?? '', at: row.last_report_at },
  };
}

function reportView(row: Selectable<ReportsTable>): ReportView {
  return {
    previous_hash: row.previous_hash, new_hash: row.new_hash, success: row.success === 1,
    rollback_reason: row.rollback_reason, timestamp: row.timestamp, received_at: row.received_at,
  };
}

/** One page ordered by device_id; one row more than asked tells whether another page follows. `filter`: a group's. */
export async function listDevices(db: Kysely<Database>, q: DeviceQuery, filter?: TargetFilter, nowMs = Date.now()): Promise<DevicePage> {
  let query = db.selectFrom('devices').selectAll().orderBy('device_id').limit(q.limit + 1);
  if (filter) query = query.where((eb) => filterCondition(eb, filter, nowMs) ?? EVERY);
  if (q.artifact !== undefined) query = query.where('artifact', '=', q.artifact);
  if (q.versionHash !== undefined) query = query.where('version_hash', '=', q.versionHash);
  if (q.seenSince !== undefined) query = query.where('last_seen', '>=', q.seenSince);
  if (q.seenBefore !== undefined) query = query.where('last_seen', '<', q.seenBefore);
  if (q.after !== undefined) query = query.where('device_id', '>', q.after);
  const rows = await query.execute();
  const more = rows.length > q.limit;
  const page = more ? rows.slice(0, q.limit) : rows;
  return { devices: page.map(deviceView), nextAfter: more ? page[page.length - 1]!.device_id : null };
}

export async function deviceWithReports(db: Kysely<Database>, deviceId: string): Promise<(DeviceView & { reports: ReportView[] }) | null> {
  const row = await db.selectFrom('devices').selectAll().where('device_id', '=', deviceId).executeTakeFirst();
  if (!row) return null;
  const reports = await db.selectFrom('reports').selectAll().where('device_id', '=', deviceId)
    .orderBy('id', 'desc').limit(DEVICE_REPORTS_SHOWN).execute();
  return { ...deviceView(row), reports: reports.map(reportView) };
}

/** The newest reports first (by arrival), with each device's current track. */
export async function recentReports(db: Kysely<Database>, q: ReportQuery): Promise<FleetReportView[]> {
  let query = db.selectFrom('reports').leftJoin('devices', 'devices.device_id', 'reports.device_id')
    .selectAll('reports').select('devices.artifact').orderBy('reports.id', 'desc').limit(q.limit);
  if (q.success !== undefined) query = query.where('reports.success', '=', q.success ? 1 : 0);
  // The track as a check by primary key per report (as in summary): a plain condition on the
  // joined column would let SQLite walk the track's devices first.
  const artifact = q.artifact;
  if (artifact !== undefined) {
    query = query.where((eb) => eb.exists(eb.selectFrom('devices as d').select('d.device_id')
      .whereRef('d.device_id', '=', 'reports.device_id').where('d.artifact', '=', artifact)));
  }
  const rows = await query.execute();
  return rows.map((row) => ({ device_id: row.device_id, artifact: row.artifact ?? '', ...reportView(row) }));
}

export async function summary(db: Kysely<Database>, artifact: string, nowMs: number): Promise<FleetSummary> {
  const versions = await db.selectFrom('fleet_versions').select(['version_hash', 'version', 'devices'])
    .where('artifact', '=', artifact).where('devices', '>', 0).execute();
  // Driven by the day's reports (an index range), each checked against its device's track by
  // primary key: a join let SQLite walk every device of the track instead (1.4 s at a million).
  const outcomes = await db.selectFrom('reports')
    .select((eb) => ['success', eb.fn.countAll<number>().as('n')])
    .where('received_at', '>=', seconds(nowMs) - DAY_SECONDS)
    .where((eb) => eb.exists(eb.selectFrom('devices').select('devices.device_id')
      .whereRef('devices.device_id', '=', 'reports.device_id').where('devices.artifact', '=', artifact)))
    .groupBy('success').execute();
  const list = versions.map((v) => ({ version_hash: v.version_hash, version: v.version ?? '', devices: Number(v.devices) }))
    .sort((a, b) => b.devices - a.devices || (a.version_hash < b.version_hash ? -1 : 1));
  const count = (success: number) => Number(outcomes.find((o) => o.success === success)?.n ?? 0);
  return {
    artifact,
    devices: list.reduce((sum, v) => sum + v.devices, 0),
    versions: list,
    reports_24h: { success: count(1), failure: count(0) },
  };
}

/**
 * The latest report per device among those for the target received at or after `sinceMs`, by
 * outcome, counting only a device that was offered the target from the version the report says
 * it left (rollout_offers): a device never offered it, or one claiming to leave a version it was
 * not seen on, is stored and shown but decides nothing. To the millisecond: a report that arrives in the same second as a rollout's start
 * counts, one in the same second before a resume does not. The whole-second column narrows the
 * search on its index; a row written before migration 0009 has no milliseconds and counts
 * from the next whole second, as it did then.
 */
export async function rolloutHealth(db: Kysely<Database>, queries: readonly RolloutHealthQuery[]): Promise<RolloutHealth[]> {
  const answers: RolloutHealth[] = [];
  for (const { targetHash, sinceMs } of queries) {
    const latest = db.selectFrom('reports')
      .select((eb) => eb.fn.max('id').as('id'))
      .where('new_hash', '=', targetHash).where('received_at', '>=', Math.floor(sinceMs / 1000))
      .where(({ exists, selectFrom }) => exists(selectFrom('rollout_offers as o').select('o.device_id')
        .whereRef('o.device_id', '=', 'reports.device_id').whereRef('o.target_hash', '=', 'reports.new_hash')
        .whereRef('o.from_hash', '=', 'reports.previous_hash')))
      .where((eb) => eb.or([
        eb('received_at_ms', '>=', sinceMs),
        eb.and([eb('received_at_ms', 'is', null), eb('received_at', '>=', Math.ceil(sinceMs / 1000))]),
      ]))
      .groupBy('device_id');
    const rows = await db.selectFrom('reports')
      .select((eb) => ['success', eb.fn.countAll<number>().as('n')])
      .where('id', 'in', latest).groupBy('success').execute();
    const count = (success: number) => Number(rows.find((r) => r.success === success)?.n ?? 0);
    answers.push({ targetHash, success: count(1), failure: count(0) });
  }
  return answers;
}

/** Each offer replaces the device's earlier offer of the same target. */
export async function recordOffers(db: Kysely<Database>, offers: readonly OfferRecord[]): Promise<void> {
  if (offers.length === 0) return;
  const rows = offers.map((o) => ({ device_id: o.deviceId, target_hash: o.targetHash, from_hash: o.fromHash, offered_at: Math.floor(o.offeredAtMs / 1000) }));
  await db.insertInto('rollout_offers').values(rows)
    .onConflict((oc) => oc.columns(['device_id', 'target_hash']).doUpdateSet((eb) => ({ from_hash: eb.ref('excluded.from_hash'), offered_at: eb.ref('excluded.offered_at') })))
    .execute();
}

/** Retention: devices not seen since, reports received before. Answers what was deleted. */
export async function prune(db: Kysely<Database>, deviceSeenBefore: number | undefined, reportReceivedBefore: number | undefined): Promise<{ devices: number; reports: number }> {
  let devices = 0;
  let reports = 0;
  if (reportReceivedBefore !== undefined) {
    const r = await db.deleteFrom('reports').where('received_at', '<', reportReceivedBefore).executeTakeFirst();
    reports = Number(r.numDeletedRows);
    // An offer older than every kept report still counts a report that comes later; kept as long as reports.
    await db.deleteFrom('rollout_offers').where('offered_at', '<', reportReceivedBefore).execute();
  }
  if (deviceSeenBefore !== undefined) {
    devices = await db.transaction().execute(async (tx) => {
      const r = await tx.deleteFrom('devices').where('last_seen', '<', deviceSeenBefore).executeTakeFirst();
      const deleted = Number(r.numDeletedRows);
      // A rare, bulk change: count again rather than track each deleted device.
      if (deleted > 0) await recountVersions(tx);
      return deleted;
    });
  }
  return { devices, reports };
}

/** Devices per track and version for the gauge: the `top` largest versions of each track, the rest summed. */
export async function versionCounts(db: Kysely<Database>): Promise<{ artifact: string; version_hash: string; devices: number }[]> {
  const rows = await db.selectFrom('fleet_versions').select(['artifact', 'version_hash', 'devices']).where('devices', '>', 0).execute();
  return rows.map((r) => ({ artifact: r.artifact, version_hash: r.version_hash, devices: Number(r.devices) }));
}
