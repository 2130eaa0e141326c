import type BetterSqlite3 from 'better-sqlite3';
import type { HeartbeatRecord, ReportRecord } from '../../../messages/fleet.js';
import { latestReports, seconds, versionGroups, VersionMoves } from './moves.js';
import type { FleetStore } from './store.js';

// The flush on SQLite (plan in store.ts): better-sqlite3 is synchronous, so one
// transaction of statements prepared once per connection is the whole write, with no
// round trip and no query text built per flush.
//
// The touch is set-based: the devices of a flush on the same track, hash and version text (a
// few such groups for a whole fleet) go in multi-row statements of 256 and 16 devices, those
// three texts bound once per statement; a statement whose devices also share their hardware
// and transport texts (the common case) binds those once too, and four values per device. A
// prepared statement per device bound all ten values each time, and the call and the binding
// were a third of its cost (the runs are in bench/results/2026-11-27-fleet-bulk-writes.md). A
// statement that did not touch all its devices has them read back one by one, as before:
// new devices and moves are rare.

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
 * Devices per multi-row touch: a group's devices fill as many of the large statement as they
 * can, then of the small one; the few left are touched one statement each, all ten values
 * bound, which is what every touch cost before.
 */
export const TOUCH_SIZES = [256, 16] as const;

/**
 * The touch of `rows` devices of one version. `alike`: the chunk's hardware and transport texts
 * are the same for all, bound once (four values a device); else each device's own (seven).
 * Grouping by those texts too left a fleet of varied hardware texts in groups of one or two,
 * at twice the cost of a statement per device. The `+` keeps the planner off the index on
 * (artifact, version_hash, device_id), which the constant track and hash would otherwise make
 * it scan once per device: each device is found by its id (flush-plans.test.ts).
 */
export function touchStatement(rows: number, alike: boolean): string {
  const set = alike ? 'hw_arch = $arch, hw_os = $os, transport = $transport' : 'hw_arch = u.column5, hw_os = u.column6, transport = u.column7';
  const row = `(${Array<string>(alike ? 4 : 7).fill('?').join(', ')})`;
  return `update devices set last_seen = u.column2, hw_free_ram = u.column3, hw_free_disk = u.column4, ${set}
    from (values ${Array<string>(rows).fill(row).join(', ')}) as u
    where devices.device_id = u.column1 and +devices.artifact = $artifact and +devices.version_hash = $hash and +devices.version = $version`;
}

/** The flush's statements (exported for the test that checks how each reaches devices). */
export const SQLITE_FLUSH_STATEMENTS = {
  touchOne: `update devices set last_seen = ?, hw_arch = ?, hw_os = ?, hw_free_ram = ?, hw_free_disk = ?, transport = ?
    where device_id = ? and artifact = ? and version_hash = ? and version = ?`,
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

function prepare(file: BetterSqlite3.Database): Prepared {
  const s = (text: string): Statement => file.prepare(text);
  const { touchOne, locate, upsert, gain, lose, report, lastReport } = Object.fromEntries(
    Object.entries(SQLITE_FLUSH_STATEMENTS).map(([name, text]) => [name, s(text)]),
  ) as Record<keyof typeof SQLITE_FLUSH_STATEMENTS, Statement>;
  const touches = TOUCH_SIZES.map((rows) => ({
    rows, alike: s(touchStatement(rows, true)), mixed: s(touchStatement(rows, false)), four: new Array<unknown>(rows * 4), seven: new Array<unknown>(rows * 7),
  }));

  /** Touches the group's devices; those the touch may have missed are pushed to `missed`. */
  const touch = (group: readonly HeartbeatRecord[], missed: HeartbeatRecord[]) => {
    const g = group[0]!;
    const texts = { artifact: g.artifact, hash: g.versionHash, version: g.version };
    let at = 0;
    for (const { rows, alike, mixed, four, seven } of touches) {
      for (; group.length - at >= rows; at += rows) {
        const first = group[at]!;
        let same = true;
        for (let i = 1; i < rows && same; i++) {
          const r = group[at + i]!;
          same = r.hwArch === first.hwArch && r.hwOs === first.hwOs && r.transport === first.transport;
        }
        const width = same ? 4 : 7;
        const values = same ? four : seven;
        for (let i = 0; i < rows; i++) {
          const r = group[at + i]!;
          const v = i * width;
          values[v] = r.deviceId;
          values[v + 1] = seconds(r.receivedAtMs);
          values[v + 2] = r.hwFreeRam;
          values[v + 3] = r.hwFreeDisk;
          if (!same) {
            values[v + 4] = r.hwArch;
            values[v + 5] = r.hwOs;
            values[v + 6] = r.transport;
          }
        }
        const changes = same
          ? alike.run(...values, { ...texts, arch: first.hwArch, os: first.hwOs, transport: first.transport }).changes
          : mixed.run(...values, texts).changes;
        // Which of them it missed is not told: all are read back (new devices and moves are rare).
        if (changes < rows) missed.push(...group.slice(at, at + rows));
      }
    }
    for (; at < group.length; at++) {
      const r = group[at]!;
      if (touchOne.run(seconds(r.receivedAtMs), r.hwArch, r.hwOs, r.hwFreeRam, r.hwFreeDisk, r.transport, r.deviceId, r.artifact, r.versionHash, r.version).changes === 0) missed.push(r);
    }
  };

  const write = file.transaction((heartbeats: readonly HeartbeatRecord[], reports: readonly ReportRecord[]) => {
    const moves = new VersionMoves();
    const missed: HeartbeatRecord[] = [];
    for (const group of versionGroups(heartbeats)) touch(group, missed);
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
