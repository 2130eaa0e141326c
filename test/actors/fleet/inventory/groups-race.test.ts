import t from 'tap';
import { deleteGroup, groupNames, MAX_GROUPS, putGroup } from '../../../../src/actors/fleet/inventory/groups.js';
import { filterJson, parseFilter } from '../../../../src/shared/targeting/filter.js';
import { ENGINES, openTestReplicas } from '../../../helpers/databases.js';
import { concurrently, outcomes } from '../../../helpers/races.js';

// PUT /admin/groups/{name} from many operators at once, as a cluster's replicas take them: each
// replica's fleet actor has its own pool on the one PostgreSQL database, and READ COMMITTED lets
// two transactions both count 255 groups, or both find no row of a new name, before either
// inserts. The cap must hold and a creation must never fail because another made the same name.

const NOW = 1_800_000_000_000;
const REPLICAS = 3;
const ROUNDS = 5;

for (const engine of ENGINES) {
  t.test(`${engine}: concurrent creations of distinct names stop at the cap`, async (t) => {
    const dbs = await openTestReplicas(t, engine, REPLICAS, 'updater-groups-race-');
    // The groups already there, in one statement (what putGroup stores for the filter {}).
    const stored = { filter: JSON.stringify(filterJson(parseFilter({}))), created_at: NOW / 1000, updated_at: NOW / 1000 };
    await dbs[0]!.insertInto('device_groups').values(Array.from({ length: MAX_GROUPS - 6 }, (_, i) => ({ name: `old-${i}`, ...stored }))).execute();
    for (let round = 0; round < ROUNDS; round++) {
      const results = await concurrently(dbs, 40, (db, i) => putGroup(db, `new-${round}-${i}`, parseFilter({ tags: ['lab'] }), NOW));
      t.same(outcomes(results), { 200: 6, '409 TOO_MANY_GROUPS': 34 }, `round ${round}: six created, the rest refused at the cap`);
      const names = await groupNames(dbs[0]!);
      t.equal(names.length, MAX_GROUPS, `round ${round}: exactly ${MAX_GROUPS} groups`);
      // Room for six again: the six just made go.
      for (const name of names.filter((n) => n.startsWith('new-'))) await deleteGroup(dbs[0]!, name, NOW);
    }
  });

  t.test(`${engine}: concurrent creations of one new name all succeed`, async (t) => {
    const dbs = await openTestReplicas(t, engine, REPLICAS, 'updater-groups-race-');
    for (let round = 0; round < ROUNDS; round++) {
      const name = `canary-${round}`;
      const results = await concurrently(dbs, 20, (db, i) => putGroup(db, name, parseFilter({ tags: [`t${i}`] }), NOW));
      t.same(outcomes(results), { 200: 20 }, `round ${round}: every PUT of ${name} answered 200`);
      t.same((await groupNames(dbs[0]!)).filter((n) => n === name), [name], 'one group of that name');
    }
  });

  t.test(`${engine}: concurrent deletes of one group: one answers the group, the others find none`, async (t) => {
    const dbs = await openTestReplicas(t, engine, REPLICAS, 'updater-groups-race-');
    for (let round = 0; round < ROUNDS; round++) {
      await putGroup(dbs[0]!, 'doomed', parseFilter({}), NOW);
      const results = await concurrently(dbs, 10, (db) => deleteGroup(db, 'doomed', NOW));
      const found = results.filter((r) => r.status === 'fulfilled' && r.value !== null).length;
      t.same(outcomes(results), { 200: 10 }, `round ${round}: no delete failed`);
      t.equal(found, 1, `round ${round}: one delete answered the group (200), the others null (404 GROUP_NOT_FOUND)`);
    }
  });
}
