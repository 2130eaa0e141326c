import t from 'tap';
import type { HeartbeatRecord } from '../../../../src/messages/fleet.js';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import { changeTags, countMatching, setTags, withTargeting, writeAttributes } from '../../../../src/actors/fleet/inventory/targeting.js';
import { deleteGroup, groupNames, MAX_GROUPS, putGroup } from '../../../../src/actors/fleet/inventory/groups.js';
import { parseAttributes } from '../../../../src/shared/targeting/attributes.js';
import { matches, parseFilter, type DeviceFacts } from '../../../../src/shared/targeting/filter.js';
import { ENGINES, openTestDatabase } from '../../../helpers/databases.js';

// Attributes and tags in the database, on each engine: a set equal to the stored one is not
// written again, and a filter in SQL selects exactly the devices `matches` selects in memory.

const NOW = 1_800_000_000_000;
const H = (n: number) => n.toString(16).padStart(64, '0');
const hb = (deviceId: string, over: Partial<HeartbeatRecord> = {}): HeartbeatRecord => ({
  deviceId, versionHash: H(1), version: '1', artifact: 'app', hwArch: 'a', hwOs: 'o', hwFreeRam: 1, hwFreeDisk: 1, transport: 'http', receivedAtMs: NOW, ...over,
});

/** A small deterministic random source, so a failure names a case that comes back. */
function random(seed: number): () => number {
  let x = seed;
  return () => ((x = (x * 1_103_515_245 + 12_345) & 0x7fffffff) / 0x7fffffff);
}

for (const engine of ENGINES) {
  t.test(engine, async (t) => {
    const db = await openTestDatabase(t, engine, 'updater-tg-');

    await t.test('an unchanged set is not written again', async (t) => {
      await q.writeBatch(db, [hb('d1'), hb('d2')], []);
      const sets = (d1: Record<string, string>, d2: Record<string, string>) => [{ deviceId: 'd1', attributes: parseAttributes(d1) }, { deviceId: 'd2', attributes: parseAttributes(d2) }];
      t.same(await writeAttributes(db, sets({ hw: 'B', site: 'lab' }, {})), { written: 1 }, 'd2 sent {} and had none: nothing to write');
      t.same(await writeAttributes(db, sets({ site: 'lab', hw: 'B' }, {})), { written: 0 }, 'the same sets, in another order');
      t.same(await writeAttributes(db, [{ deviceId: 'd1', attributes: parseAttributes({ hw: 'B' }) }, { deviceId: 'd1', attributes: parseAttributes({ hw: 'C' }) }]), { written: 1 }, 'the latest of a device wins');
      const views = await withTargeting(db, [(await q.deviceWithReports(db, 'd1'))!, (await q.deviceWithReports(db, 'd2'))!]);
      t.same(views.map((v) => v.attributes), [{ hw: 'C' }, {}]);
      t.same(await writeAttributes(db, sets({}, { hw: 'A' })), { written: 2 }, 'cleared and set');
      t.same((await withTargeting(db, [(await q.deviceWithReports(db, 'd1'))!]))[0]!.attributes, {});
    });

    await t.test('a filter in SQL selects what matches() selects in memory', async (t) => {
      const next = random(39);
      const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
      const TAGS = ['canary', 'lab', 'night', 'b'];
      const facts = new Map<string, DeviceFacts>();
      const beats: HeartbeatRecord[] = [];
      const sets = [];
      for (let i = 0; i < 60; i++) {
        const id = `m${i}`;
        const seen = NOW - Math.floor(next() * 48) * 3_600_000;
        const beat = hb(id, { artifact: pick(['app', 'other']), versionHash: H(pick([1, 2])), receivedAtMs: seen });
        beats.push(beat);
        const attributes = parseAttributes(Object.fromEntries([['hw', pick(['A', 'B', 'C'])], ['site', pick(['lab', 'berlin'])]].filter(() => next() < 0.7)));
        sets.push({ deviceId: id, attributes });
        const tags = TAGS.filter(() => next() < 0.3).sort();
        facts.set(id, { tags, attributes, artifact: beat.artifact, versionHash: beat.versionHash, lastSeen: Math.floor(seen / 1000) });
      }
      await q.writeBatch(db, beats, []);
      await writeAttributes(db, sets);
      for (const [id, f] of facts) t.ok(await setTags(db, id, f.tags));
      const filters = [
        {}, { tags: ['canary'] }, { tags: ['canary', 'lab'] }, { attributes: { hw: 'B' } }, { attributes: { hw: ['A', 'C'], site: 'lab' } },
        { artifact: 'other' }, { version_hash: H(2) }, { seen_within: '24h' }, { tags: ['night'], attributes: { site: ['berlin'] }, seen_within: '36h', artifact: 'app' },
      ];
      const sizes: number[] = [];
      for (const raw of filters) {
        const filter = parseFilter(raw);
        const inMemory = [...facts].filter(([, f]) => matches(filter, f, NOW)).map(([id]) => id).sort();
        sizes.push(inMemory.length);
        const page = await q.listDevices(db, { limit: 1000, after: 'm' }, filter, NOW);
        t.same(page.devices.map((d) => d.device_id).filter((id) => id.startsWith('m')).sort(), inMemory, JSON.stringify(raw));
        t.equal(await countMatching(db, filter, NOW), (await q.listDevices(db, { limit: 1000 }, filter, NOW)).devices.length, 'the count is the list\'s length');
      }
      t.ok(sizes.filter((n) => n > 0 && n < 60).length >= filters.length - 1, `every filter but {} selects some, not all (${sizes.join(', ')})`);

      // Tags by filter do the same: add to what matches, remove from what matches.
      const lab = parseFilter({ attributes: { site: 'lab' } });
      const labIds = [...facts].filter(([, f]) => matches(lab, f, NOW)).map(([id]) => id);
      t.ok(labIds.length > 5 && labIds.length < 55, `${labIds.length} lab devices of 60`);
      t.same(await changeTags(db, { filter: lab, add: ['x'], remove: ['night'] }, NOW), { devices: labIds.length });
      const tagged = (await withTargeting(db, (await q.listDevices(db, { limit: 1000, after: 'm' }, undefined, NOW)).devices)).filter((d) => d.device_id.startsWith('m'));
      for (const d of tagged) {
        const inLab = labIds.includes(d.device_id);
        if (inLab !== (d.tags!.includes('x') && !d.tags!.includes('night'))) t.fail(`${d.device_id}: ${d.tags}`);
      }
      t.pass('every lab device got x and lost night; no other did');
    });

    await t.test('groups are capped; replacing one is not adding one', async (t) => {
      for (let i = 0; i < MAX_GROUPS; i++) await putGroup(db, `g${i}`, parseFilter({}), NOW);
      await t.rejects(putGroup(db, 'one-more', parseFilter({}), NOW), { code: 'TOO_MANY_GROUPS' });
      t.match(await putGroup(db, 'g0', parseFilter({ tags: ['lab'] }), NOW), { name: 'g0', filter: { tags: ['lab'] } }, 'a change of an existing group');
      t.ok(await deleteGroup(db, 'g1', NOW));
      t.equal((await putGroup(db, 'one-more', parseFilter({}), NOW)).name, 'one-more', 'room again after a delete');
      t.equal((await groupNames(db)).length, MAX_GROUPS);
    });
  });
}
