import type pg from 'pg';
import type { HeartbeatRecord, ReportRecord } from '../../../messages/fleet.js';
import { latestReports, seconds, versionGroups, VersionMoves } from './moves.js';
import type { FleetStore } from './store.js';
import { byCodePoint } from './targeting.js';

// The flush on PostgreSQL (plan in store.ts): each step is one statement over a whole
// chunk, its rows passed as one array parameter per column and unnested on the server, so a
// flush costs a handful of round trips whatever its size. The statements are named, hence
// parsed and planned once per connection.

/** Rows per statement: the arrays are single parameters, so only memory bounds this. */
const CHUNK = 5_000;
/**
 * Version groups touched with their track, hash and version bound once (TOUCH_VERSION): the
 * largest few, of at least GROUP_MIN devices. Each is a statement, so a flush of many small
 * groups (devices reporting invented hashes) must not become a round trip per device: the
 * rest go in TOUCH, all ten columns as arrays, CHUNK devices a statement.
 */
const GROUPED_STATEMENTS = 8;
const GROUP_MIN = 64;

/**
 * A statement's rows, one array parameter per column ($1, $2, …), as a subquery `u`: one
 * unnest per column in a select list, which the executor streams row by row (ProjectSet).
 * `from unnest(a, b, …)` copies every row into a tuplestore before the first is read: the
 * database server spent 10.35 µs a touched device that way and 8.70 streamed (medians of the
 * fleet-write bench, 200,000 devices, bench/results/2026-11-30-postgres-streamed-rows.md).
 * Arrays of unequal length pad the short ones with nulls either way; the flush's are all one
 * length.
 */
function arrayRows(columns: readonly (readonly [name: string, type: string])[]): string {
  return `(select ${columns.map(([name, type], i) => `unnest($${i + 1}::${type}[]) as ${name}`).join(', ')}) as u`;
}

/** The ten device columns of TOUCH, INSERT_NEW and UPSERT, in deviceColumns' order. */
const DEVICE_COLUMNS = [['device_id', 'text'], ['artifact', 'text'], ['version_hash', 'text'], ['version', 'text'], ['hw_arch', 'text'], ['hw_os', 'text'],
  ['hw_free_ram', 'bigint'], ['hw_free_disk', 'bigint'], ['transport', 'text'], ['last_seen', 'bigint']] as const;
const DEVICE_NAMES = DEVICE_COLUMNS.map(([name]) => name).join(', ');

/**
 * How TOUCH and TOUCH_VERSION find a device: by the primary key, the device's version checked
 * on the row found, as one expression that no index can serve. Compared column by column, the
 * planner took the (artifact, version_hash, device_id) index, whose probe compares the track
 * and the 64-character hash again at every level of the tree before the id (without
 * statistics it took (artifact, device_id), the track first): 13.8 µs of the backend's CPU a
 * touched device, against 10.8 µs by the primary key (200,000 devices,
 * bench/results/2026-11-29-postgres-touch-by-primary-key.md). SQLite's touch does the same
 * with `+` (store-sqlite.ts).
 */
const BY_PRIMARY_KEY = 'd.device_id = u.device_id collate "C" and (d.artifact = u.artifact and d.version_hash = u.version_hash and d.version = u.version) is true';

const SET_SEEN = `set last_seen = u.last_seen, hw_arch = u.hw_arch, hw_os = u.hw_os,
    hw_free_ram = u.hw_free_ram, hw_free_disk = u.hw_free_disk, transport = u.transport`;
const TOUCH = `update devices as d ${SET_SEEN}
  from ${arrayRows(DEVICE_COLUMNS)}
  where ${BY_PRIMARY_KEY}`;
/**
 * TOUCH for the devices of one track, hash and version: the three texts are sent once, as
 * $8 to $10, and repeated on the server (array_fill), not encoded, sent and parsed once per
 * device (the hash is 64 characters). The join is TOUCH's own, so the planner sees the same
 * shape. Given the three texts as constants, its plan for a touch of 3,000 new devices read
 * every device through the primary key with no condition and matched the streamed rows against
 * each (flush-plans.test.ts); a plan of that kind ran a flush of 20,000 new devices into a
 * table of 20,000 for 42 s.
 */
const TOUCH_VERSION = `update devices as d ${SET_SEEN}
  from (select unnest($1::text[]) as device_id, ${['artifact', 'version_hash', 'version'].map((name, i) => `unnest(array_fill($${8 + i}::text, array[cardinality($1::text[])])) as ${name}`).join(', ')},
    unnest($2::text[]) as hw_arch, unnest($3::text[]) as hw_os, unnest($4::bigint[]) as hw_free_ram, unnest($5::bigint[]) as hw_free_disk,
    unnest($6::text[]) as transport, unnest($7::bigint[]) as last_seen) as u
  where ${BY_PRIMARY_KEY}`;
/**
 * The rows of devices the touch missed, locked until the flush commits (in device_id order, so
 * two replicas locking some of the same devices wait for each other rather than deadlock):
 * another replica flushing the same device (a load balancer without affinity) cannot move it
 * between this read and this flush's move of its fleet_versions count.
 */
const LOCATE = 'select device_id, artifact, version_hash, version from devices where device_id = any($1::text[]) order by device_id collate "C" for update';
/** The devices LOCATE did not find: inserted unless another replica did since (those are located again). */
const INSERT_NEW = `insert into devices (${DEVICE_NAMES}, first_seen)
  select u.*, u.last_seen from ${arrayRows(DEVICE_COLUMNS)}
  on conflict (device_id) do nothing returning device_id`;
const UPSERT = `insert into devices (${DEVICE_NAMES}, first_seen)
  select u.*, u.last_seen from ${arrayRows(DEVICE_COLUMNS)}
  on conflict (device_id) do update set artifact = excluded.artifact, version_hash = excluded.version_hash, version = excluded.version,
    hw_arch = excluded.hw_arch, hw_os = excluded.hw_os, hw_free_ram = excluded.hw_free_ram, hw_free_disk = excluded.hw_free_disk,
    transport = excluded.transport, last_seen = excluded.last_seen`;
const GAIN = `insert into fleet_versions (artifact, version_hash, version, devices)
  select * from ${arrayRows([['artifact', 'text'], ['version_hash', 'text'], ['version', 'text'], ['devices', 'integer']])}
  on conflict (artifact, version_hash) do update set devices = fleet_versions.devices + excluded.devices, version = excluded.version`;
const LOSE = `update fleet_versions as f set devices = f.devices + u.by
  from ${arrayRows([['artifact', 'text'], ['version_hash', 'text'], ['by', 'integer']])}
  where f.artifact = u.artifact and f.version_hash = u.version_hash`;
const REPORTS = `insert into reports (device_id, previous_hash, new_hash, success, rollback_reason, "timestamp", received_at, received_at_ms)
  select * from ${arrayRows([['device_id', 'text'], ['previous_hash', 'text'], ['new_hash', 'text'], ['success', 'integer'], ['rollback_reason', 'text'],
    ['timestamp', 'bigint'], ['received_at', 'bigint'], ['received_at_ms', 'bigint']])}`;
const LAST_REPORTS = `update devices as d set last_report_success = u.success, last_report_new_hash = u.new_hash,
    last_report_reason = u.reason, last_report_at = u.at
  from ${arrayRows([['device_id', 'text'], ['success', 'integer'], ['new_hash', 'text'], ['reason', 'text'], ['at', 'bigint']])}
  where d.device_id = u.device_id collate "C"`;

/** The statements that reach devices (exported for the test that checks how each does). */
export const POSTGRES_DEVICE_STATEMENTS = { touch: TOUCH, touch_version: TOUCH_VERSION, locate: LOCATE, last_reports: LAST_REPORTS } as const;

const named = (name: string, text: string, values: unknown[]): pg.QueryConfig => ({ name: `fleet_${name}`, text, values: values.map(arrayParameter) });

/** A JSON escape that a PostgreSQL array literal reads differently: a control character or a lone surrogate. */
const JSON_ONLY_ESCAPE = /\\[bfnrtu]/;

/**
 * An array parameter as PostgreSQL's array literal text, made by JSON.stringify in native code:
 * for strings and integers the two syntaxes agree (elements quoted, `"` and `\` escaped by a
 * backslash) except for JSON's own escapes of control characters and lone surrogates, which
 * the rare array holding one leaves to the driver's element-by-element encoding. The driver's
 * encoding alone cost as much CPU as the database's whole touch of a device.
 */
function arrayParameter(values: unknown): unknown {
  if (!Array.isArray(values)) return values;
  const json = JSON.stringify(values);
  return JSON_ONLY_ESCAPE.test(json) ? values : `{${json.slice(1, -1)}}`;
}

interface Located {
  device_id: string;
  artifact: string;
  version_hash: string;
  version: string;
}

/** The ten device columns of TOUCH and UPSERT, one array each. */
function deviceColumns(rows: readonly HeartbeatRecord[]): unknown[] {
  const n = rows.length;
  const cols = Array.from({ length: 10 }, () => new Array<unknown>(n));
  for (let i = 0; i < n; i++) {
    const r = rows[i]!;
    cols[0]![i] = r.deviceId;
    cols[1]![i] = r.artifact;
    cols[2]![i] = r.versionHash;
    cols[3]![i] = r.version;
    cols[4]![i] = r.hwArch;
    cols[5]![i] = r.hwOs;
    cols[6]![i] = r.hwFreeRam;
    cols[7]![i] = r.hwFreeDisk;
    cols[8]![i] = r.transport;
    cols[9]![i] = seconds(r.receivedAtMs);
  }
  return cols;
}

/** TOUCH_VERSION's seven arrays. */
function versionColumns(rows: readonly HeartbeatRecord[]): unknown[] {
  return [rows.map((r) => r.deviceId), rows.map((r) => r.hwArch), rows.map((r) => r.hwOs), rows.map((r) => r.hwFreeRam), rows.map((r) => r.hwFreeDisk),
    rows.map((r) => r.transport), rows.map((r) => seconds(r.receivedAtMs))];
}

/** The devices' rows as they are, locked until the flush ends (LOCATE). */
async function locate(client: pg.PoolClient, rows: readonly HeartbeatRecord[]): Promise<Map<string, Located>> {
  const located = await client.query<Located>(named('locate', LOCATE, [rows.map((r) => r.deviceId)]));
  return new Map(located.rows.map((row) => [row.device_id, row]));
}

/** The FleetStore of a PostgreSQL pool: named statements, parsed once per connection. */
export function postgresFleetStore(pool: pg.Pool): FleetStore {
  return { engine: 'postgres', writeBatch: (heartbeats, reports) => writeBatchPostgres(pool, heartbeats, reports) };
}

async function writeBatchPostgres(pool: pg.Pool, heartbeats: readonly HeartbeatRecord[], reports: readonly ReportRecord[]): Promise<void> {
  const client = await pool.connect();
  let failed: unknown;
  try {
    // Every statement of a flush reaches devices by key, a few thousand at a time: index
    // lookups are the one right plan, and every index of devices they can use ends in
    // device_id (migration 0005; test/actors/fleet/inventory/flush-plans.test.ts checks the plans).
    // Left to its statistics, the planner of a table that grew from empty since its last
    // ANALYZE chose scans per unnested row that read a whole table or a whole version's range
    // (one 5,000-device touch ran for seconds, and the buffer filled behind it).
    await client.query('begin; set local enable_seqscan = off; set local enable_hashjoin = off; set local enable_mergejoin = off');
    const moves = new VersionMoves();
    // The steady state ends with the touches: every device was on its version, and no row came
    // back to parse. A statement that touched fewer than it holds has them all read back.
    const missed: HeartbeatRecord[] = [];
    const groups = versionGroups(heartbeats);
    const grouped = groups.slice(0, GROUPED_STATEMENTS).filter((group) => group.length >= GROUP_MIN);
    for (const group of grouped) {
      const { artifact, versionHash, version } = group[0]!;
      for (let i = 0; i < group.length; i += CHUNK) {
        const chunk = group.slice(i, i + CHUNK);
        const touched = await client.query(named('touch_version', TOUCH_VERSION, [...versionColumns(chunk), artifact, versionHash, version]));
        if (touched.rowCount !== chunk.length) missed.push(...chunk);
      }
    }
    const others = groups.slice(grouped.length).flat();
    for (let i = 0; i < others.length; i += CHUNK) {
      const chunk = others.slice(i, i + CHUNK);
      const touched = await client.query(named('touch', TOUCH, deviceColumns(chunk)));
      if (touched.rowCount !== chunk.length) missed.push(...chunk);
    }
    for (let i = 0; i < missed.length; i += CHUNK) {
      const chunk = missed.slice(i, i + CHUNK);
      // Those the touch did not match: new, or on another track, hash or version text, or
      // moved by another replica's flush since. Their counts move by what the locked rows say.
      const was = await locate(client, chunk);
      // Inserted in device_id order, as LOCATE locks: two replicas inserting some of the same new
      // devices wait for each other's rows in one order, never each for the other's.
      const fresh = chunk.filter((r) => !was.has(r.deviceId));
      // A chunk whose touch missed one comes back whole: those on their version were touched.
      // (One that another replica's flush moved to this version meanwhile was not, and keeps
      // that flush's last_seen, from within the same flush interval.)
      const upserted = chunk.filter((r) => {
        const row = was.get(r.deviceId);
        return row !== undefined && (row.artifact !== r.artifact || row.version_hash !== r.versionHash || row.version !== r.version);
      });
      if (fresh.length > 0) {
        const inserted = new Set((await client.query<{ device_id: string }>(named('insert_new', INSERT_NEW, deviceColumns([...fresh].sort((a, b) => byCodePoint(a.deviceId, b.deviceId)))))).rows.map((row) => row.device_id));
        // Counted in the buffer's order: the last heartbeat's version text names the version.
        for (const r of fresh) if (inserted.has(r.deviceId)) moves.device(undefined, r);
        const raced = fresh.filter((r) => !inserted.has(r.deviceId));
        if (raced.length > 0) {
          const now = await locate(client, raced);
          for (const r of raced) {
            const row = now.get(r.deviceId);
            if (row) was.set(r.deviceId, row);
            // Inserted by another replica and deleted again before this located it: new here too.
            else moves.device(undefined, r);
            upserted.push(r);
          }
        }
      }
      for (const r of upserted) {
        const row = was.get(r.deviceId);
        if (row === undefined) continue;
        if (row.artifact !== r.artifact || row.version_hash !== r.versionHash || row.version !== r.version) moves.device(row, r);
      }
      if (upserted.length > 0) await client.query(named('upsert', UPSERT, deviceColumns(upserted)));
    }
    const gained = moves.gained;
    if (gained.length > 0) {
      await client.query(named('gain', GAIN, [gained.map((m) => m.artifact), gained.map((m) => m.version_hash), gained.map((m) => m.version), gained.map((m) => m.devices)]));
    }
    const lost = moves.lost;
    if (lost.length > 0) await client.query(named('lose', LOSE, [lost.map((m) => m.artifact), lost.map((m) => m.version_hash), lost.map((m) => m.devices)]));
    for (let i = 0; i < reports.length; i += CHUNK) {
      const chunk = reports.slice(i, i + CHUNK);
      await client.query(named('reports', REPORTS, [
        chunk.map((r) => r.deviceId), chunk.map((r) => r.previousHash), chunk.map((r) => r.newHash), chunk.map((r) => (r.success ? 1 : 0)),
        chunk.map((r) => r.rollbackReason), chunk.map((r) => r.timestamp), chunk.map((r) => seconds(r.receivedAtMs)), chunk.map((r) => r.receivedAtMs),
      ]));
    }
    // A device never seen by a heartbeat has no row: its reports are still kept and counted.
    const latest = latestReports(reports);
    if (latest.length > 0) {
      await client.query(named('last_reports', LAST_REPORTS, [
        latest.map((r) => r.deviceId), latest.map((r) => (r.success ? 1 : 0)), latest.map((r) => r.newHash),
        latest.map((r) => r.rollbackReason), latest.map((r) => seconds(r.receivedAtMs)),
      ]));
    }
    await client.query('commit');
  } catch (err) {
    failed = err;
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    // A connection that failed mid-transaction is discarded rather than reused.
    client.release(failed instanceof Error ? failed : undefined);
  }
}
