import t from 'tap';
import type { HeartbeatRecord } from '../../../../src/messages/fleet.js';
import { parseDeviceQuery } from '../../../../src/actors/http/admin/fleet-query.js';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import { changeTags, countMatching } from '../../../../src/actors/fleet/inventory/targeting.js';
import { parseFilter } from '../../../../src/shared/targeting/filter.js';
import { ENGINES, openTestDatabase } from '../../../helpers/databases.js';

// A duration is digits and a unit, as long as the operator writes it: `seen_within` and
// `not_seen_for` of GET /admin/devices and a filter's `seen_within` reached the database as a
// moment before the epoch, 1e22 seconds or -Infinity away, which PostgreSQL's bigint cannot
// hold (an uncoded 500 there, while SQLite answered). A duration longer than the epoch's age
// reaches back to the first device ever seen, on both engines.

const NOW = 1_800_000_000_000;
const H = (n: number) => n.toString(16).padStart(64, '0');
const hb = (deviceId: string, receivedAtMs: number): HeartbeatRecord => ({
  deviceId, versionHash: H(1), version: '1', artifact: 'app', hwArch: 'a', hwOs: 'o', hwFreeRam: 1, hwFreeDisk: 1, transport: 'http', receivedAtMs,
});
const LONG = ['99999999999999999999d', `${'9'.repeat(400)}h`, '1000000000000000h'];

for (const engine of ENGINES) {
  t.test(engine, async (t) => {
    const db = await openTestDatabase(t, engine, 'updater-long-');
    await q.writeBatch(db, [hb('d1', NOW - 1000), hb('d2', NOW - 30 * 86_400_000)], []);
    for (const duration of LONG) {
      const ids = async (query: string) => (await q.listDevices(db, parseDeviceQuery(query, NOW))).devices.map((d) => d.device_id);
      t.same(await ids(`seen_within=${duration}`), ['d1', 'd2'], `seen_within=${duration.slice(0, 24)}: every device`);
      t.same(await ids(`not_seen_for=${duration}`), [], `not_seen_for=${duration.slice(0, 24)}: none`);
      const filter = parseFilter({ seen_within: duration });
      t.equal(await countMatching(db, filter, NOW), 2, 'a filter\'s seen_within: every device');
      t.same(await changeTags(db, { filter, add: ['old-enough'], remove: [] }, NOW), { devices: 2 });
    }
  });
}
