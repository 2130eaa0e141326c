import { sql } from 'kysely';
import t from 'tap';
import type { HeartbeatRecord } from '../../../../src/messages/fleet.js';
import { POSTGRES_DEVICE_STATEMENTS } from '../../../../src/actors/fleet/inventory/store-postgres.js';
import { SQLITE_FLUSH_STATEMENTS, TOUCH_SIZES, touchStatement } from '../../../../src/actors/fleet/inventory/store-sqlite.js';
import { driverOf } from '../../../../src/shared/database/connect.js';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import { openTestDatabase } from '../../../helpers/databases.js';

// Every statement of the flush that reaches devices must find each device by its id, whatever
// the planner knows: a probe that reads a range (all the devices of a track and version) per
// device made one flush quadratic in the fleet's size. PostgreSQL plans the flush's named
// statements generically, with no statistics for a table that grew since its last ANALYZE; the
// test asks for exactly that plan, with autovacuum kept away so that no ANALYZE can rescue it.

const DEVICES = 3_000;

function fleetOnOneVersion(): HeartbeatRecord[] {
  return Array.from({ length: DEVICES }, (_, i) => ({
    deviceId: `plan-${String(i).padStart(5, '0')}`, versionHash: 'a'.repeat(64), version: '1.0.0', artifact: 'app',
    hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 1, hwFreeDisk: 2, transport: 'http', receivedAtMs: 1_800_000_000_000,
  }));
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

/** Each scan of devices in the plan: how it reads, and by what condition. */
function devicesScans(node: PlanNode, found: { type: string; index?: string; cond: string }[] = []) {
  if (node['Relation Name'] === 'devices' && node['Node Type'] !== 'ModifyTable') {
    // A bitmap heap scan reads what its bitmap index scans found: their conditions are its own.
    const probes = node['Node Type'] === 'Bitmap Heap Scan' ? (node.Plans ?? []) : [node];
    for (const probe of probes) found.push({ type: node['Node Type'], ...(probe['Index Name'] ? { index: probe['Index Name'] } : {}), cond: probe['Index Cond'] ?? '' });
    return found;
  }
  for (const child of node.Plans ?? []) devicesScans(child, found);
  return found;
}

t.test('postgres: each flush statement on devices probes the primary key by device_id, planned generically and for a flush of new devices', async (t) => {
  const db = await openTestDatabase(t, 'postgres', 'updater-plans-');
  await sql`alter table devices set (autovacuum_enabled = off)`.execute(db);
  await q.writeBatch(db, fleetOnOneVersion(), []);
  const stats = await sql<{ analyzed: number }>`select (coalesce(last_analyze, last_autoanalyze) is not null)::int as analyzed from pg_stat_user_tables where relname = 'devices'`.execute(db);
  t.equal(stats.rows[0]?.analyzed, 0, 'devices has never been analyzed');
  await db.connection().execute(async (c) => {
    await sql`set plan_cache_mode = force_generic_plan`.execute(c);
    // As the flush runs them (store-postgres.ts).
    await sql`set enable_seqscan = off`.execute(c);
    await sql`set enable_hashjoin = off`.execute(c);
    await sql`set enable_mergejoin = off`.execute(c);
    for (const [name, text] of Object.entries(POSTGRES_DEVICE_STATEMENTS)) {
      const params = Math.max(...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
      await sql.raw(`prepare plan_${name} as ${text}`).execute(c);
      const explained = await sql.raw<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`explain (format json) execute plan_${name}(${Array(params).fill('null').join(', ')})`).execute(c);
      const scans = devicesScans(explained.rows[0]!['QUERY PLAN'][0].Plan);
      t.ok(scans.length > 0, `${name} reads devices`);
      for (const scan of scans) {
        t.match(scan.type, /^(Index|Index Only|Bitmap Heap) Scan$/, `${name}: an index scan (${JSON.stringify(scan)})`);
        t.match(scan.cond, /\bdevice_id = /, `${name}: the index condition names device_id (${JSON.stringify(scan)})`);
        // Not an index that compares the track and the hash before the id at every level (store-postgres.ts, BY_PRIMARY_KEY).
        t.equal(scan.index, 'devices_pkey', `${name}: by the primary key (${JSON.stringify(scan)})`);
      }
    }
    // The first executions of a named statement are planned for their values: a touch of as many
    // new devices as the table holds, all on the table's one version, is the trap (a plan that
    // took the version's devices for a few and scanned the unnested rows once per device ran
    // 42 s for 20,000).
    await sql`set plan_cache_mode = force_custom_plan`.execute(c);
    const n = DEVICES;
    const texts = (f: (i: number) => string) => `'{${Array.from({ length: n }, (_, i) => `"${f(i)}"`).join(',')}}'`;
    const numbers = (v: number) => `'{${Array<number>(n).fill(v).join(',')}}'`;
    const ids = texts((i) => `new-${i}`);
    const h = `'${'a'.repeat(64)}'`;
    const custom = {
      touch: [ids, texts(() => 'app'), texts(() => 'a'.repeat(64)), texts(() => '1.0.0'), texts(() => 'arm64'), texts(() => 'linux'), numbers(1), numbers(2), texts(() => 'http'), numbers(1_800_000_000)],
      touch_version: [ids, texts(() => 'arm64'), texts(() => 'linux'), numbers(1), numbers(2), texts(() => 'http'), numbers(1_800_000_000), `'app'`, h, `'1.0.0'`],
    };
    for (const [name, values] of Object.entries(custom)) {
      const explained = await sql.raw<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`explain (format json) execute plan_${name}(${values.join(', ')})`).execute(c);
      const scans = devicesScans(explained.rows[0]!['QUERY PLAN'][0].Plan);
      t.ok(scans.length > 0, `${name} for ${n} devices reads devices`);
      for (const scan of scans) {
        t.match(scan.cond, /\bdevice_id = /, `${name} for ${n} devices: the index condition names device_id (${JSON.stringify(scan)})`);
        t.equal(scan.index, 'devices_pkey', `${name} for ${n} devices: by the primary key (${JSON.stringify(scan)})`);
      }
    }
  });
});

t.test('sqlite: each flush statement on devices searches by device_id', async (t) => {
  const db = await openTestDatabase(t, 'sqlite', 'updater-plans-');
  await q.writeBatch(db, fleetOnOneVersion(), []);
  const driver = driverOf(db);
  if (driver.engine !== 'sqlite') throw new Error('expected the SQLite driver');
  const statements = [
    ...TOUCH_SIZES.flatMap((rows) => [[`touch of ${rows} alike`, touchStatement(rows, true)], [`touch of ${rows} mixed`, touchStatement(rows, false)]] as const),
    ['touchOne', SQLITE_FLUSH_STATEMENTS.touchOne], ['locate', SQLITE_FLUSH_STATEMENTS.locate], ['lastReport', SQLITE_FLUSH_STATEMENTS.lastReport],
  ] as const;
  for (const [name, text] of statements) {
    const params: unknown[] = Array<null>([...text.matchAll(/\?/g)].length).fill(null);
    // The touch binds the texts its devices share once, by name.
    const named = [...text.matchAll(/\$(\w+)/g)].map((m) => [m[1]!, null]);
    if (named.length > 0) params.push(Object.fromEntries(named));
    const plan = driver.file.prepare(`explain query plan ${text}`).all(...params) as { detail: string }[];
    // The touch's own rows (its VALUES) are read in order; devices is what must be searched.
    const onDevices = plan.filter((row) => !/^SCAN \d+-ROW VALUES CLAUSE/.test(row.detail));
    t.equal(onDevices.length, 1, `${name} reads devices once: ${plan.map((row) => row.detail).join(' | ')}`);
    for (const row of onDevices) t.match(row.detail, /^SEARCH devices USING (INDEX \S+|PRIMARY KEY) \(device_id=\?\)/, `${name}: ${row.detail}`);
  }
});
