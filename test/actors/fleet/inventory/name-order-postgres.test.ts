import { randomBytes } from 'node:crypto';
import t from 'tap';
import pg from 'pg';
import type { HeartbeatRecord } from '../../../../src/messages/fleet.js';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import { groupNames, groups, putGroup } from '../../../../src/actors/fleet/inventory/groups.js';
import { setTags, withTargeting, writeAttributes } from '../../../../src/actors/fleet/inventory/targeting.js';
import { openDatabase } from '../../../../src/shared/database/connect.js';
import { parseAttributes } from '../../../../src/shared/targeting/attributes.js';
import { parseFilter } from '../../../../src/shared/targeting/filter.js';
import { parseTagList } from '../../../../src/shared/targeting/names.js';
import { TEST_PG_URL } from '../../../helpers/databases.js';

// Tags, attribute names and group names are shown sorted (docs/fleet.md: `tags` sorted, groups
// by name), by code point as SQLite's BINARY collation and parseTagList sort them. Their
// columns have the database's own collation on PostgreSQL, and a database made with
// `CREATE DATABASE updater` (the README) takes its template's, en_US.UTF-8 on most
// installations: ORDER BY then put "canary" before "Lab", and the same call answered
// differently on the two engines. Here a database of the ICU "en" collation plays it.

const NOW = 1_800_000_000_000;
const hb = (deviceId: string): HeartbeatRecord => ({
  deviceId, versionHash: '1'.padStart(64, '0'), version: '1', artifact: 'app', hwArch: 'a', hwOs: 'o', hwFreeRam: 1, hwFreeDisk: 1, transport: 'http', receivedAtMs: NOW,
});

async function admin(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_PG_URL });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

t.test('a PostgreSQL database of a language collation shows names by code point', async (t) => {
  const name = `updater_t_${randomBytes(6).toString('hex')}`;
  await admin(`CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en' LOCALE 'C'`);
  const url = new URL(TEST_PG_URL);
  url.pathname = `/${name}`;
  const { db, close } = await openDatabase(url.toString());
  t.teardown(async () => {
    await close();
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });

  const tags = parseTagList(['canary', 'Lab', 'b-2', 'B_1'], 'tags');
  t.same(tags, ['B_1', 'Lab', 'b-2', 'canary'], 'the API sorts by code point');
  await q.writeBatch(db, [hb('d1')], []);
  t.ok(await setTags(db, 'd1', tags));
  await writeAttributes(db, [{ deviceId: 'd1', attributes: parseAttributes({ tz: 'UTC', Site: 'lab', hw: 'B' }) }]);
  const [view] = await withTargeting(db, [(await q.deviceWithReports(db, 'd1'))!]);
  t.same(view!.tags, tags, 'the device\'s tags, sorted as the API sorts them');
  t.same(Object.keys(view!.attributes!), ['Site', 'hw', 'tz'], 'its attributes by name');

  for (const group of ['canary', 'Lab', 'beta']) await putGroup(db, group, parseFilter({}), NOW);
  t.same((await groups(db, NOW)).map((g) => g.name), ['Lab', 'beta', 'canary'], 'GET /admin/groups by name');
  t.same(await groupNames(db), ['Lab', 'beta', 'canary']);
});
