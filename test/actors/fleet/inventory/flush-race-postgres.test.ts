import t from 'tap';
import { sql } from 'kysely';
import type { HeartbeatRecord } from '../../../../src/messages/fleet.js';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import { openTestReplicas } from '../../../helpers/databases.js';

// Two replicas of a cluster flush the same devices at once: a device behind a load balancer
// without affinity heartbeats to both within one flush interval, right after it installed a new
// version. Each flush finds the device on its old version and moves one count of
// fleet_versions from the old to the new; both did, so the counts (the fleet summary, the
// console's versions, updater_fleet_devices) drifted from the rows until a prune recounted.
// The counts must equal the rows after every round.

const NOW = 1_800_000_000;
const DEVICES = 200;
const ROUNDS = 4;
const H = (n: number) => n.toString(16).padStart(64, '0');
const hb = (deviceId: string, version: number, at: number): HeartbeatRecord => ({
  deviceId, versionHash: H(version), version: String(version), artifact: 'app', hwArch: 'a', hwOs: 'o', hwFreeRam: 1, hwFreeDisk: 1, transport: 'http', receivedAtMs: at * 1000,
});

t.test('postgres: two replicas flushing the same moves keep fleet_versions equal to the devices', async (t) => {
  const [a, b] = await openTestReplicas(t, 'postgres', 2, 'updater-flush-race-');
  const ids = Array.from({ length: DEVICES }, (_, i) => `dev-${String(i).padStart(4, '0')}`);
  const check = async (what: string) => {
    const rows = await sql<{ version_hash: string; n: string }>`select version_hash, count(*) as n from devices group by version_hash`.execute(a!);
    const actual = Object.fromEntries(rows.rows.map((r) => [r.version_hash.slice(-1), Number(r.n)]));
    const counted = Object.fromEntries((await q.versionCounts(a!)).filter((v) => v.devices !== 0).map((v) => [v.version_hash.slice(-1), v.devices]));
    t.same(counted, actual, `${what}: the counts are the devices'`);
  };
  const failures: string[] = [];
  /** The same heartbeats flushed by both replicas at once; one in reverse order, as two buffers fill. */
  const both = async (batch: HeartbeatRecord[]) => {
    const results = await Promise.allSettled([q.writeBatch(a!, batch, []), q.writeBatch(b!, [...batch].reverse(), [])]);
    // A flush PostgreSQL ends as a deadlock victim is kept and written again by the next flush.
    for (const r of results) if (r.status === 'rejected') { failures.push(String(r.reason)); await q.writeBatch(a!, batch, []); }
  };
  await both(ids.map((id) => hb(id, 1, NOW)));
  await check(`${DEVICES} new devices, first seen by both replicas`);
  for (let round = 0; round < ROUNDS; round++) {
    const version = round + 2;
    await both(ids.map((id) => hb(id, version, NOW + round + 1)));
    await check(`round ${round}: all ${DEVICES} moved to version ${version}`);
  }
  // Both lock the rows they move in device_id order, whatever order their buffers hold.
  t.same(failures, [], 'no flush failed (no deadlock between the two)');
});
