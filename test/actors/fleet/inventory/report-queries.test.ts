import t from 'tap';
import type { HeartbeatRecord, ReportRecord } from '../../../../src/messages/fleet.js';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import { ENGINES, openTestDatabase } from '../../../helpers/databases.js';

// The two reads the console needs beyond the documented reads of docs/fleet.md: devices not seen for a while, and the
// newest reports across the fleet (failed updates with their reasons). Both engines.

const H = (n: number) => n.toString(16).padStart(64, '0');
const NOW = 1_800_000_000_000;

function hb(deviceId: string, artifact: string, receivedAtMs: number): HeartbeatRecord {
  return { deviceId, versionHash: H(1), version: '1.0.0', artifact, hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 1, hwFreeDisk: 1, transport: 'http', receivedAtMs };
}
function rep(deviceId: string, success: boolean, receivedAtMs: number): ReportRecord {
  return { deviceId, previousHash: H(1), newHash: H(2), success, rollbackReason: success ? '' : `boot failed on ${deviceId}`, timestamp: 7, receivedAtMs };
}

for (const engine of ENGINES) {
  t.test(engine, async (t) => {
    const db = await openTestDatabase(t, engine);
    const hour = 3_600_000;
    await q.writeBatch(db, [hb('a-1', 'app', NOW), hb('a-2', 'app', NOW - 3 * hour), hb('a-3', 'app', NOW - 30 * hour), hb('s-1', 'sensor', NOW - 5 * hour)], []);
    await q.writeBatch(db, [], [rep('a-1', false, NOW - 50_000), rep('a-2', true, NOW - 40_000), rep('s-1', false, NOW - 30_000)]);
    await q.writeBatch(db, [], [rep('a-1', false, NOW - 20_000), rep('ghost', false, NOW - 10_000)]);

    await t.test('devices not seen since a moment, alone and with the other filters', async (t) => {
      const ids = async (query: Parameters<typeof q.listDevices>[1]) => (await q.listDevices(db, query)).devices.map((d) => d.device_id);
      t.same(await ids({ limit: 100, seenBefore: (NOW - 2 * hour) / 1000 }), ['a-2', 'a-3', 's-1']);
      t.same(await ids({ limit: 100, seenBefore: (NOW - 2 * hour) / 1000, artifact: 'app' }), ['a-2', 'a-3']);
      t.same(await ids({ limit: 100, seenBefore: (NOW - 2 * hour) / 1000, seenSince: (NOW - 24 * hour) / 1000 }), ['a-2', 's-1'], 'a window');
      t.same(await ids({ limit: 1, seenBefore: (NOW - 2 * hour) / 1000, after: 'a-2' }), ['a-3'], 'pages like any list');
    });

    await t.test('the newest reports first, by outcome and by track', async (t) => {
      const failures = await q.recentReports(db, { limit: 100, success: false });
      t.same(failures.map((r) => [r.device_id, r.artifact]), [['ghost', ''], ['a-1', 'app'], ['s-1', 'sensor'], ['a-1', 'app']], 'a device without a heartbeat has no track');
      t.same(failures[1], { device_id: 'a-1', artifact: 'app', previous_hash: H(1), new_hash: H(2), success: false, rollback_reason: 'boot failed on a-1', timestamp: 7, received_at: (NOW - 20_000) / 1000 });
      t.same((await q.recentReports(db, { limit: 100, success: false, artifact: 'app' })).map((r) => r.received_at), [(NOW - 20_000) / 1000, (NOW - 50_000) / 1000]);
      t.same((await q.recentReports(db, { limit: 100, success: true })).map((r) => r.device_id), ['a-2']);
      t.equal((await q.recentReports(db, { limit: 2 })).length, 2, 'limit holds');
    });
  });
}
