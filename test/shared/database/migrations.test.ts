import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { engineOf, openDatabase, redactDatabaseUrl } from '../../../src/shared/database/connect.js';
import { migrateToLatest, migrations } from '../../../src/shared/database/migrations.js';
import { createTestDatabase, ENGINES } from '../../helpers/databases.js';

for (const engine of ENGINES) {
  t.test(`${engine}: every migration applies to an empty database, in order, once`, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'updater-mig-'));
    const target = await createTestDatabase(engine, dir);
    t.teardown(async () => {
      await target.drop();
      await rm(dir, { recursive: true, force: true });
    });
    const opened = await openDatabase(target.location);
    t.equal(opened.engine, engine);
    const tables = (await opened.db.introspection.getTables()).map((table) => table.name).sort();
    t.same(tables, ['devices', 'reports'], 'the schema of the latest migration');
    const columns = (await opened.db.introspection.getTables()).find((table) => table.name === 'devices')!.columns.map((c) => c.name);
    t.ok(columns.includes('last_report_at') && columns.includes('hw_free_disk'));
    t.same(await migrateToLatest(opened.db as never, engine), [], 'a second run applies nothing');
    await opened.close();
    const again = await openDatabase(target.location);
    t.same((await again.db.introspection.getTables()).length, 2, 'reopening keeps the schema');
    await again.close();
  });
}

t.test('migration names are numbered and sort in the order they are listed', async (t) => {
  const names = Object.keys(migrations('sqlite'));
  t.ok(names.every((n) => /^\d{4}_[a-z0-9_]+$/.test(n)), 'NNNN_name');
  t.same([...names].sort(), names);
  t.same(Object.keys(migrations('postgres')), names, 'the same list on both engines');
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
