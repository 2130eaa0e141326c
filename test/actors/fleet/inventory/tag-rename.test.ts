import t from 'tap';
import type { HeartbeatRecord } from '../../../../src/messages/fleet.js';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import { changeTags, setTags, withTargeting } from '../../../../src/actors/fleet/inventory/targeting.js';
import { parseFilter } from '../../../../src/shared/targeting/filter.js';
import { ENGINES, openTestDatabase } from '../../../helpers/databases.js';

// POST /admin/tags with a filter on a tag that the same change removes (renaming a tag:
// {"filter":{"tags":["old"]},"add":["new"],"remove":["old"]}): every device the filter matched
// when the call came in gets the added tags, whatever the removal does to the filter.

const NOW = 1_800_000_000_000;
const H = (n: number) => n.toString(16).padStart(64, '0');
const hb = (deviceId: string): HeartbeatRecord => ({
  deviceId, versionHash: H(1), version: '1', artifact: 'app', hwArch: 'a', hwOs: 'o', hwFreeRam: 1, hwFreeDisk: 1, transport: 'http', receivedAtMs: NOW,
});

for (const engine of ENGINES) {
  t.test(engine, async (t) => {
    const db = await openTestDatabase(t, engine, 'updater-rename-');
    await q.writeBatch(db, [hb('d1'), hb('d2'), hb('d3')], []);
    t.ok(await setTags(db, 'd1', ['old', 'lab']));
    t.ok(await setTags(db, 'd2', ['old']));
    t.ok(await setTags(db, 'd3', ['lab']));

    t.same(await changeTags(db, { filter: parseFilter({ tags: ['old'] }), add: ['new'], remove: ['old'] }, NOW), { devices: 2 }, 'the filter matched d1 and d2');
    const tags = async () => Object.fromEntries((await withTargeting(db, (await q.listDevices(db, { limit: 10 }, undefined, NOW)).devices)).map((d) => [d.device_id, d.tags]));
    t.same(await tags(), { d1: ['lab', 'new'], d2: ['new'], d3: ['lab'] }, 'old renamed to new on the devices that had it, nothing else touched');

    // A device at the most tags it may carry can have one renamed: it never ends with more.
    const full = Array.from({ length: 15 }, (_, i) => `t${String(i).padStart(2, '0')}`);
    t.ok(await setTags(db, 'd3', [...full, 'old']));
    t.same(await changeTags(db, { filter: parseFilter({ tags: ['old'] }), add: ['new'], remove: ['old'] }, NOW), { devices: 1 });
    t.same((await tags()).d3, [...full, 'new'].sort(), 'sixteen tags, one renamed');
  });
}
