import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readdirSync } from 'node:fs';
import { Migrator, NO_MIGRATIONS, sql, type Kysely } from 'kysely';
import t, { type Test } from 'tap';
import { engineOf, openDatabase, redactDatabaseUrl } from '../../../src/shared/database/connect.js';
import { migrateToLatest, migrations } from '../../../src/shared/database/migrations.js';
import type { Database, Engine } from '../../../src/shared/database/schema.js';
import { createTestDatabase, ENGINES } from '../../helpers/databases.js';
import { REPO_ROOT } from '../../helpers/server.js';

/** An empty database of the engine, dropped with its directory when `t` ends. */
async function freshDatabase(t: Test, engine: Engine) {
  const dir = await mkdtemp(join(tmpdir(), 'updater-mig-'));
  const target = await createTestDatabase(engine, dir);
  t.teardown(async () => {
    await target.drop();
    await rm(dir, { recursive: true, force: true });
  });
  return target;
}

for (const engine of ENGINES) {
  t.test(`${engine}: every migration applies to an empty database, in order, once`, async (t) => {
    const target = await freshDatabase(t, engine);
    const opened = await openDatabase(target.location);
    t.equal(opened.engine, engine);
    const tables = (await opened.db.introspection.getTables()).map((table) => table.name).sort();
    t.same(tables, ['audit_log', 'cluster_meta', 'cluster_tracks', 'device_attributes', 'device_auth_keys', 'device_groups', 'device_identities', 'device_revocations', 'device_tags', 'devices', 'fleet_versions', 'operator_tokens', 'reports', 'rollout_offers', 'webhook_outbox'], 'the schema of the latest migration');
    const columns = (await opened.db.introspection.getTables()).find((table) => table.name === 'devices')!.columns.map((c) => c.name);
    t.ok(columns.includes('last_report_at') && columns.includes('hw_free_disk'));
    t.same(await migrateToLatest(opened.db as never, engine), [], 'a second run applies nothing');
    await opened.close();
    const again = await openDatabase(target.location);
    t.same((await again.db.introspection.getTables()).length, 15, 'reopening keeps the schema');
    await again.close();
  });
}

for (const engine of ENGINES) {
  t.test(`${engine}: 0002 counts the devices that 0001 already held`, async (t) => {
    const target = await freshDatabase(t, engine);
    const { db, close } = await openDatabase(target.location);
    const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations(engine) } });
    t.notOk((await migrator.migrateTo('0001_fleet_inventory')).error, 'back to the first schema');
    const row = (id: string, hash: string) => ({ device_id: id, artifact: 'app', version_hash: hash, version: '1', hw_arch: '', hw_os: '', hw_free_ram: 0, hw_free_disk: 0, transport: 'http', first_seen: 1, last_seen: 1 });
    await db.insertInto('devices').values([row('a', 'h1'), row('b', 'h1'), row('c', 'h2')]).execute();
    t.same(await migrateToLatest(db as never, engine), ['0002_fleet_version_counts', '0003_cluster_tracks', '0004_fleet_touch_without_last_seen_index', '0005_fleet_version_index_by_device', '0006_fleet_half_free_pages', '0007_operator_tokens', '0008_audit_log', '0009_reports_received_ms', '0010_webhook_outbox', '0011_device_identities', '0012_rollout_offers', '0013_targeting']);
    const counts = await db.selectFrom('fleet_versions').select(['version_hash', 'devices']).orderBy('version_hash').execute();
    t.same(counts.map((c) => [c.version_hash, Number(c.devices)]), [['h1', 2], ['h2', 1]]);
    await close();
  });
}

/** The tables and their columns, to compare a schema before a migration and after its down. */
async function schemaOf(db: Kysely<any>): Promise<string[]> {
  const tables = await db.introspection.getTables();
  return tables.map((table) => `${table.name}(${table.columns.map((c) => c.name).sort().join(',')})`).sort();
}

for (const engine of ENGINES) {
  t.test(`${engine}: each migration on its own applies, reverts to the schema before it, and applies again`, async (t) => {
    const target = await freshDatabase(t, engine);
    const { db, close } = await openDatabase(target.location);
    const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations(engine) } });
    t.notOk((await migrator.migrateTo(NO_MIGRATIONS)).error, 'every migration reverts, back to an empty database');
    for (const name of Object.keys(migrations(engine))) {
      const before = await schemaOf(db);
      const up = await migrator.migrateUp();
      t.same([up.error, up.results?.map((r) => `${r.migrationName} ${r.status}`)], [undefined, [`${name} Success`]], `${name} applies`);
      const after = await schemaOf(db);
      const down = await migrator.migrateDown();
      t.same([down.error, down.results?.map((r) => `${r.migrationName} ${r.status}`)], [undefined, [`${name} Success`]], `${name} reverts`);
      t.same(await schemaOf(db), before, `${name}: down leaves the schema it found`);
      t.notOk((await migrator.migrateUp()).error, `${name} applies again`);
      t.same(await schemaOf(db), after, `${name}: the same schema the second time`);
    }
    await close();
  });
}

/** The secondary indexes of devices, by name. */
async function deviceIndexes(db: Kysely<Database>, engine: Engine): Promise<string[]> {
  const rows = engine === 'sqlite'
    ? await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'devices' and name not like 'sqlite_%'`.execute(db)
    : await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'devices' and indexname <> 'devices_pkey'`.execute(db);
  return rows.rows.map((r) => r.name).sort();
}

for (const engine of ENGINES) {
  t.test(`${engine}: 0004 drops the last_seen index, 0005 trades the version index for one ending in device_id, 0006 frees half of each page, and down brings each back`, async (t) => {
    const target = await freshDatabase(t, engine);
    const { db, close } = await openDatabase(target.location);
    t.same(await deviceIndexes(db, engine), ['devices_artifact_hash_id', 'devices_artifact_id']);
    const reloptions = async () => (await sql<{ reloptions: string[] | null }>`select reloptions from pg_class where relname = 'devices'`.execute(db)).rows[0]!.reloptions;
    if (engine === 'postgres') t.same(await reloptions(), ['fillfactor=50'], 'room for HOT updates');
    const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations(engine) } });
    t.notOk((await migrator.migrateTo('0005_fleet_version_index_by_device')).error);
    if (engine === 'postgres') t.same(await reloptions(), ['fillfactor=80'], '0006 down: the fillfactor of 0004');
    t.notOk((await migrator.migrateTo('0004_fleet_touch_without_last_seen_index')).error);
    t.same(await deviceIndexes(db, engine), ['devices_artifact_id', 'devices_artifact_version']);
    t.notOk((await migrator.migrateTo('0003_cluster_tracks')).error);
    t.same(await deviceIndexes(db, engine), ['devices_artifact_id', 'devices_artifact_version', 'devices_last_seen']);
    await close();
  });
}

t.test('migration names are numbered and sort in the order they are listed', async (t) => {
  const names = Object.keys(migrations('sqlite'));
  t.ok(names.every((n) => /^\d{4}_[a-z0-9_]+$/.test(n)), 'NNNN_name');
  t.same([...names].sort(), names);
  t.same(Object.keys(migrations('postgres')), names, 'the same list on both engines');
  const files = readdirSync(join(REPO_ROOT, 'src', 'shared', 'database', 'migrations')).filter((f) => f.endsWith('.ts')).sort();
  t.same(files.map((f) => f.replace(/\.ts$/, '').replace(/-/g, '_')), names, 'one file per migration, named by its number');
});

t.test('a postgres:// URL selects PostgreSQL, anything else is an SQLite file', async (t) => {
  t.equal(engineOf('postgres://u@h/db'), 'postgres');
  t.equal(engineOf('postgresql://u@h/db'), 'postgres');
  t.equal(engineOf('/var/lib/updater/updater.db'), 'sqlite');
  t.equal(redactDatabaseUrl('postgres://u:secret@h:5432/db'), 'postgres://u:***@h:5432/db', 'the password never reaches a message');
});

t.test('an unreachable PostgreSQL is DATABASE_UNREACHABLE naming the database key', async (t) => {
  const { freePort } = await import('../../helpers/fixture.js');
  const port = await freePort();
  await t.rejects(openDatabase(`postgres://updater:pw@127.0.0.1:${port}/nothing`), { code: 'DATABASE_UNREACHABLE', message: /^database: cannot open postgres:\/\/updater:\*\*\*@/ });
});
