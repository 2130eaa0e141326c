import type BetterSqlite3 from 'better-sqlite3';
import type { HeartbeatRecord, ReportRecord } from '../../../messages/fleet.js';
import { latestReports, seconds, VersionMoves } from './moves.js';
import type { FleetStore } from './store.js';

// The flush on SQLite (plan in store.ts): better-sqlite3 is synchronous, so one
// transaction of statements prepared once per connection is the whole write, with no
// round trip and no query text built per flush.
//
// The touch is set-based: the devices of a flush that share track, hash, version text and
// hardware texts (the steady state: a few such groups for a whole fleet) go in multi-row
// statements, those six texts bound once per statement and four values per device. A prepared
// statement per device bound all ten each time, and the call and the binding were a third of
// its cost (per device, measured alone on 100,000 devices: 2.7 µs per row, 2.1 this way;
// the runs are in bench/results/2026-11-27-fleet-bulk-writes.md). A chunk that did not touch
// all its devices is read back device by device, as before: new devices and moves are rare.

type Statement = BetterSqlite3.Statement<unknown[]>;

interface Prepared {
  readonly write: (heartbeats: readonly HeartbeatRecord[], reports: readonly ReportRecord[]) => void;
}

/** The FleetStore of an SQLite file: its statements are prepared once, here. */
export function sqliteFleetStore(file: BetterSqlite3.Database): FleetStore {
  const p = prepare(file);
  return { engine: 'sqlite', writeBatch: async (heartbeats, reports) => p.write(heartbeats, reports) };
}

/**
 * Devices per touch statement: a group's devices fill as many of the large one as they can,
 * the rest go in the small one, its unused rows bound to null (no device has a null id).
 */
export const TOUCH_SIZES = [256, 16] as const;

/**
 * The touch of `rows` devices of one group. The `+` keeps the planner off the index on
 * (artifact, version_hash, device_id), which the constant track and hash would otherwise make it
 * scan once per device: each device is found by its id (flush-plans.test.ts).
 */
export function touchStatement(rows: number): string {
  return `update devices set last_seen = u.column2, hw_free_ram = u.column3, hw_free_disk = u.column4, hw_arch = $arch, hw_os = $os, transport = $transport
    from (values ${Array.from({ length: rows }, () => '(?, ?, ?, ?)').join(', ')}) as u
    where devices.device_id = u.column1 and +devices.artifact = $artifact and +devices.version_hash = $hash and +devices.version = $version`;
}

/** The flush's statements (exported for the test that checks how each reaches devices). */
export const SQLITE_FLUSH_STATEMENTS = {
  locate: 'select artifact, version_hash, version from devices where device_id = ?',
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

type Located = { artifact: string; version_hash: string; version: string } | undefined;

/** Whether two records share the texts a touch statement binds once. */
const sameGroup = (a: HeartbeatRecord, b: HeartbeatRecord) => a.artifact === b.artifact && a.versionHash === b.versionHash
  && a.version === b.version && a.hwArch === b.hwArch && a.hwOs === b.hwOs && a.transport === b.transport;

/** The heartbeats by group (sameGroup), in their order within each. */
function groups(heartbeats: readonly HeartbeatRecord[]): HeartbeatRecord[][] {
  const byKey = new Map<string, HeartbeatRecord[]>();
  let last: HeartbeatRecord[] | undefined;
  for (const r of heartbeats) {
    // Neighbours mostly share a group: the key is built only when the texts change.
    if (last && sameGroup(last[0]!, r)) {
      last.push(r);
      continue;
    }
    const key = `${r.artifact}\n${r.versionHash}\n${r.version}\n${r.hwArch}\n${r.hwOs}\n${r.transport}`;
    last = byKey.get(key);
    if (last) last.push(r);
    else byKey.set(key, (last = [r]));
  }
  return [...byKey.values()];
}

function prepare(file: BetterSqlite3.Database): Prepared {
  const s = (text: string): Statement => file.prepare(text);
  const { locate, upsert, gain, lose, report, lastReport } = Object.fromEntries(
    Object.entries(SQLITE_FLUSH_STATEMENTS).map(([name, text]) => [name, s(text)]),
  ) as Record<keyof typeof SQLITE_FLUSH_STATEMENTS, Statement>;
  const touches = TOUCH_SIZES.map((rows) => ({ rows, statement: s(touchStatement(rows)), values: new Array<unknown>(rows * 4) }));

  /** Touches the group's devices; those in a chunk that missed any are pushed to `missed`. */
  const touch = (group: readonly HeartbeatRecord[], missed: HeartbeatRecord[]) => {
    const g = group[0]!;
    const texts = { arch: g.hwArch, os: g.hwOs, transport: g.transport, artifact: g.artifact, hash: g.versionHash, version: g.version };
    for (let at = 0; at < group.length;) {
      const { rows, statement, values } = group.length - at >= touches[0]!.rows ? touches[0]! : touches[1]!;
      const used = Math.min(rows, group.length - at);
      for (let i = 0; i < rows; i++) {
        const r = i < used ? group[at + i]! : undefined;
        values[i * 4] = r ? r.deviceId : null;
        values[i * 4 + 1] = r ? seconds(r.receivedAtMs) : null;
        values[i * 4 + 2] = r ? r.hwFreeRam : null;
        values[i * 4 + 3] = r ? r.hwFreeDisk : null;
      }
      if (statement.run(...values, texts).changes < used) missed.push(...group.slice(at, at + used));
      at += used;
    }
  };

  const write = file.transaction((heartbeats: readonly HeartbeatRecord[], reports: readonly ReportRecord[]) => {
    const moves = new VersionMoves();
    const missed: HeartbeatRecord[] = [];
    for (const group of groups(heartbeats)) touch(group, missed);
    for (const r of missed) {
      const was = locate.get(r.deviceId) as Located;
      if (was && was.artifact === r.artifact && was.version_hash === r.versionHash && was.version === r.version) continue; // touched
      moves.device(was, r);
      const seen = seconds(r.receivedAtMs);
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
