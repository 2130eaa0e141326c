import t from 'tap';
import { sql, type Kysely } from 'kysely';
import type { HeartbeatRecord } from '../../../../src/messages/fleet.js';
import { deleteDevice } from '../../../../src/actors/fleet/identity/identities.js';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import { changeTags, forgetTargeting, setTags } from '../../../../src/actors/fleet/inventory/targeting.js';
import type { Database } from '../../../../src/shared/database/schema.js';
import { parseFilter } from '../../../../src/shared/targeting/filter.js';
import { MAX_TAGS } from '../../../../src/shared/targeting/names.js';
import { ENGINES, lockWaiters, openTestReplicas, until } from '../../../helpers/databases.js';
import { concurrently, outcomes } from '../../../helpers/races.js';

// Tag writes from many operators at once, as a cluster's replicas take them (each replica's
// fleet actor has its own pool on the one PostgreSQL database): PUT /admin/devices/{id}/tags
// replaces a device's tags, POST /admin/tags adds to every device a filter matches unless one
// would pass MAX_TAGS, and DELETE /admin/devices/{id} forgets the device's tags after deleting
// it. Each reads the device or its tags, then writes: at READ COMMITTED two of them both read
// before either writes. A device must never end with more than MAX_TAGS tags, a replacement
// must never fail because another replaced the same device, and a deleted device keeps no tag.

const NOW = 1_800_000_000_000;
const REPLICAS = 3;
const ROUNDS = 5;
const hb = (deviceId: string): HeartbeatRecord => ({
  deviceId, versionHash: '1'.padStart(64, '0'), version: '1', artifact: 'app', hwArch: 'a', hwOs: 'o', hwFreeRam: 1, hwFreeDisk: 1, transport: 'http', receivedAtMs: NOW,
});

async function tagsOf(db: Kysely<Database>, deviceId: string): Promise<string[]> {
  return (await db.selectFrom('device_tags').select('tag').where('device_id', '=', deviceId).execute()).map((r) => r.tag).sort();
}

/** A full set of tags: `common` and fifteen of the call's own. */
const fullSet = (i: number) => ['common', ...Array.from({ length: MAX_TAGS - 1 }, (_, k) => `s${i}-${k}`)].sort();

for (const engine of ENGINES) {
  t.test(`${engine}: concurrent replacements of one device's tags`, async (t) => {
    const dbs = await openTestReplicas(t, engine, REPLICAS, 'updater-tags-race-');
    await q.writeBatch(dbs[0]!, [hb('d1')], []);
    for (let round = 0; round < ROUNDS; round++) {
      const results = await concurrently(dbs, 20, (db, i) => setTags(db, 'd1', fullSet(round * 100 + i)));
      t.same(outcomes(results), { 200: 20 }, `round ${round}: every PUT answered 200`);
      const tags = await tagsOf(dbs[0]!, 'd1');
      t.ok(Array.from({ length: 20 }, (_, i) => fullSet(round * 100 + i)).some((set) => JSON.stringify(set) === JSON.stringify(tags)),
        `round ${round}: the device holds one of the sets it was given (${tags.length} tags)`);
    }
  });

  t.test(`${engine}: concurrent additions stop at ${MAX_TAGS} tags a device`, async (t) => {
    const dbs = await openTestReplicas(t, engine, REPLICAS, 'updater-tags-race-');
    await q.writeBatch(dbs[0]!, [hb('d1'), hb('d2')], []);
    const lab = parseFilter({ tags: ['lab'] });
    for (let round = 0; round < ROUNDS; round++) {
      const kept = ['lab', ...Array.from({ length: MAX_TAGS - 3 }, (_, k) => `k${k}`)];
      for (const id of ['d1', 'd2']) await setTags(dbs[0]!, id, kept);
      const results = await concurrently(dbs, 12, (db, i) => changeTags(db, { filter: lab, add: [`x${round}-${i}`], remove: [] }, NOW));
      t.same(outcomes(results), { 200: 2, '400 INVALID_FIELD': 10 }, `round ${round}: two additions made, the rest refused`);
      for (const id of ['d1', 'd2']) t.equal((await tagsOf(dbs[0]!, id)).length, MAX_TAGS, `round ${round}: ${id} holds ${MAX_TAGS} tags`);
    }
  });

  t.test(`${engine}: replacements and additions at once never pass ${MAX_TAGS} tags`, async (t) => {
    const dbs = await openTestReplicas(t, engine, REPLICAS, 'updater-tags-race-');
    await q.writeBatch(dbs[0]!, [hb('d1')], []);
    const any = parseFilter({});
    for (let round = 0; round < ROUNDS; round++) {
      await setTags(dbs[0]!, 'd1', []);
      const results = await concurrently<unknown>(dbs, 20, (db, i) => (i % 2 === 0
        ? setTags(db, 'd1', fullSet(round * 100 + i))
        : changeTags(db, { filter: any, add: [`x${round}-${i}`], remove: [] }, NOW)));
      t.notOk(Object.keys(outcomes(results)).some((k) => k.startsWith('500')), `round ${round}: no call failed (${JSON.stringify(outcomes(results))})`);
      t.ok((await tagsOf(dbs[0]!, 'd1')).length <= MAX_TAGS, `round ${round}: at most ${MAX_TAGS} tags`);
    }
  });
}

// Played step by step rather than by a flood: the window is between setTags finding the device
// and its insert committing, and DELETE /admin/devices/{id} must fall inside it. A transaction
// of the test's own inserts one of the tags and holds it, so the replacement stops at its
// insert (or, with the table lock, before it reads anything) until the test lets it go.
t.test('postgres: a device deleted while its tags are replaced keeps none', async (t) => {
  const [replica1, replica2, blocker] = await openTestReplicas(t, 'postgres', 3, 'updater-tags-race-');
  await q.writeBatch(replica1!, [hb('d1')], []);
  let letGo!: () => void;
  const released = new Promise<void>((resolve) => (letGo = resolve));
  let holding!: () => void;
  const held = new Promise<void>((resolve) => (holding = resolve));
  const hold = blocker!.connection().execute(async (c) => {
    await sql`begin`.execute(c);
    await c.insertInto('device_tags').values({ device_id: 'd1', tag: 'lab' }).execute();
    holding();
    await released;
    await sql`rollback`.execute(c);
  });
  await held;

  const replaced = setTags(replica1!, 'd1', ['canary', 'lab']);
  await until(async () => (await lockWaiters(replica2!)) >= 1);
  // What the fleet actor's deleteDevice does (index.ts): the device, then its tags.
  let removedDone = false;
  const removed = (async () => {
    await deleteDevice(replica2!, 'd1', Math.floor(NOW / 1000));
    await forgetTargeting(replica2!, ['d1']);
  })().finally(() => (removedDone = true));
  for (const p of [replaced, removed]) p.catch(() => undefined);
  // Either the delete is done, or its forgetting waits behind the replacement.
  await until(async () => removedDone || (await lockWaiters(replica2!)) >= 2);
  letGo();
  await hold;
  t.same(outcomes(await Promise.allSettled([replaced, removed])), { 200: 2 }, 'neither call failed');
  t.same(await tagsOf(replica1!, 'd1'), [], 'the deleted device keeps no tag');
});
