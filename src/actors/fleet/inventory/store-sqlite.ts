import type BetterSqlite3 from 'better-sqlite3';
import type { HeartbeatRecord, ReportRecord } from '../../../messages/fleet.js';
import { latestReports, seconds, VersionMoves } from './moves.js';
import type { FleetStore } from './store.js';

// The flush on SQLite (plan in store.ts): better-sqlite3 is synchronous, so one
// transaction of statements prepared once per connection is the whole write, with no
// round trip and no query text built per flush.

type Statement = BetterSqlite3.Statement<unknown[]>;

interface Prepared {
  readonly write: (heartbeats: readonly HeartbeatRecord[], reports: readonly ReportRecord[]) => void;
}

/** The FleetStore of an SQLite file: its statements are prepared once, here. */
export function sqliteFleetStore(file: BetterSqlite3.Database): FleetStore {
  const p = prepare(file);
  return { engine: 'sqlite', writeBatch: async (heartbeats, reports) => p.write(heartbeats, reports) };
}

/** The flush's statements (exported for the test that checks how each reaches devices). */
export const SQLITE_FLUSH_STATEMENTS = {
  touch: `update devices set last_seen = ?, hw_arch = ?, hw_os = ?, hw_free_ram = ?, hw_free_disk = ?, transport = ?
    where device_id = ? and artifact = ? and version_hash = ? and version = ?`,
  locate: 'select artifact, version_hash from devices where device_id = ?',
  upsert: `insert into devices (device_id, artifact, version_hash, version, hw_arch, hw_os, hw_free_ram, hw_free_disk, transport, first_seen, last_seen)
    values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    on conflict (device_id) do update set artifact = excluded.artifact, version_hash = excluded.version_hash, version = excluded.version,
      hw_arch = excluded.hw_arch, hw_os = excluded.hw_os, hw_free_ram = excluded.hw_free_ram, hw_free_disk = excluded.hw_free_disk,
      transport = excluded.transport, last_seen = excluded.last_seen`,
  gain: `insert into fleet_versions (artifact, version_hash, version, devices) values (?, ?, ?, ?)
    on conflict (artifact, version_hash) do update set devices = fleet_versions.devices + excluded.devices, version = excluded.version`,
  lose: 'update fleet_versions set devices = devices + ? where artifact = ? and version_hash = ?',
  report: `insert into reports (device_id, previous_hash, new_hash, success, rollback_reason, "timestamp", received_at, received_at_ms)
    values (?, ?, ?, ?, ?, ?, ?, ?)`,
  lastReport: `update devices set last_report_success = ?, last_report_new_hash = ?, last_report_reason = ?, last_report_at = ?
    where device_id = ?`,
} as const;

function prepare(file: BetterSqlite3.Database): Prepared {
  const s = (text: string): Statement => file.prepare(text);
  const { touch, locate, upsert, gain, lose, report, lastReport } = Object.fromEntries(
    Object.entries(SQLITE_FLUSH_STATEMENTS).map(([name, text]) => [name, s(text)]),
  ) as Record<keyof typeof SQLITE_FLUSH_STATEMENTS, Statement>;

  const write = file.transaction((heartbeats: readonly HeartbeatRecord[], reports: readonly ReportRecord[]) => {
    const moves = new VersionMoves();
    for (const r of heartbeats) {
      const seen = seconds(r.receivedAtMs);
      if (touch.run(seen, r.hwArch, r.hwOs, r.hwFreeRam, r.hwFreeDisk, r.transport, r.deviceId, r.artifact, r.versionHash, r.version).changes > 0) continue;
      moves.device(locate.get(r.deviceId) as { artifact: string; version_hash: string } | undefined, r);
      upsert.run(r.deviceId, r.artifact, r.versionHash, r.version, r.hwArch, r.hwOs, r.hwFreeRam, r.hwFreeDisk, r.transport, seen, seen);
    }
    for (const m of moves.gained) gain.run(m.artifact, m.version_hash, m.version, m.devices);
    for (const m of moves.lost) lose.run(m.devices, m.artifact, m.version_hash);
    for (const r of reports) {
      report.run(r.deviceId, r.previousHash, r.newHash, r.success ? 1 : 0, r.rollbackReason, r.timestamp, seconds(r.receivedAtMs), r.receivedAtMs);
    }
    // A device never seen by a heartbeat has no row: its reports are still kept and counted.
    for (const r of latestReports(reports)) lastReport.run(r.success ? 1 : 0, r.newHash, r.rollbackReason, seconds(r.receivedAtMs), r.deviceId);
  });
  return { write: (heartbeats, reports) => write(heartbeats, reports) };
}
