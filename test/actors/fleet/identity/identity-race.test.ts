import { randomBytes } from 'node:crypto';
import t from 'tap';
import type { HeartbeatRecord } from '../../../../src/messages/fleet.js';
import { deletePending, rejectPending } from '../../../../src/actors/fleet/identity/bulk.js';
import * as ids from '../../../../src/actors/fleet/identity/identities.js';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import type { AuthRequest } from '../../../../src/shared/device-identity/auth-request.js';
import { ENGINES, lockWaiters, openTestReplicas, until } from '../../../helpers/databases.js';
import { concurrently, fulfilled, outcomes } from '../../../helpers/races.js';

// Device identity writes from many callers at once, as a cluster's replicas take them (each
// replica's fleet actor has its own pool on the one PostgreSQL database, at READ COMMITTED):
// DELETE /admin/devices/{id}, POST /admin/devices/preauthorize, POST /admin/devices/reject and
// a burst of first POST /auth requests under manual enrollment. Each read, then wrote.

const NOW = 1_800_000_000;
const REPLICAS = 3;
const ROUNDS = 5;
const H = (n: number) => n.toString(16).padStart(64, '0');
const hb = (deviceId: string): HeartbeatRecord => ({
  deviceId, versionHash: H(1), version: '1', artifact: 'app', hwArch: 'a', hwOs: 'o', hwFreeRam: 1, hwFreeDisk: 1, transport: 'http', receivedAtMs: NOW * 1000,
});
const key = () => randomBytes(32).toString('hex');
const request = (deviceId: string, publicKey = key()): AuthRequest => ({ deviceId, publicKey, timestamp: NOW, signature: '0'.repeat(128) });
const noEvent = async () => undefined;

for (const engine of ENGINES) {
  t.test(`${engine}: concurrent deletes of one device`, async (t) => {
    const dbs = await openTestReplicas(t, engine, REPLICAS, 'updater-identity-race-');
    await q.writeBatch(dbs[0]!, Array.from({ length: 5 }, (_, i) => hb(`stay-${i}`)), []);
    for (let round = 0; round < ROUNDS; round++) {
      await q.writeBatch(dbs[0]!, [hb(`gone-${round}`)], []);
      const results = await concurrently(dbs, 10, (db) => ids.deleteDevice(db, `gone-${round}`, NOW));
      t.same(outcomes(results), { 200: 10 }, `round ${round}: no delete failed`);
      t.equal(fulfilled(results).filter(Boolean).length, 1, `round ${round}: one delete answered 200, the others 404 DEVICE_NOT_FOUND`);
      const counted = await dbs[0]!.selectFrom('fleet_versions').select('devices').where('version_hash', '=', H(1)).executeTakeFirstOrThrow();
      t.equal(Number(counted.devices), 5, `round ${round}: the version's device count is the devices left`);
    }
  });

  t.test(`${engine}: concurrent preauthorizations of the same ids`, async (t) => {
    const dbs = await openTestReplicas(t, engine, REPLICAS, 'updater-identity-race-');
    for (let round = 0; round < ROUNDS; round++) {
      const list = Array.from({ length: 20 }, (_, i) => `pre-${round}-${i}`);
      const keys = Array.from({ length: 10 }, key);
      const results = await concurrently(dbs, 10, (db, i) => ids.preauthorize(db, list.map((id) => ({ device_id: id, public_key: keys[i]! })), NOW));
      t.same(outcomes(results), { 200: 10 }, `round ${round}: every call answered 200`);
      const added = fulfilled(results).flat();
      t.same([...added].sort(), [...list].sort(), `round ${round}: each id added by exactly one call`);
      const rows = await dbs[0]!.selectFrom('device_identities').selectAll().where('device_id', 'in', list).execute();
      t.ok(rows.length === list.length && rows.every((r) => r.auth_state === 'preauthorized' && keys.includes(r.public_key)), `round ${round}: every id preauthorized with a key it was given`);
    }
  });

  t.test(`${engine}: a burst of new devices stops at max_pending`, async (t) => {
    const dbs = await openTestReplicas(t, engine, REPLICAS, 'updater-identity-race-');
    const policy: ids.EnrollmentPolicy = { enrollment: 'manual', maxPending: 5, pendingTtl: 3600 };
    for (let round = 0; round < ROUNDS; round++) {
      const results = await concurrently(dbs, 40, (db, i) => ids.authenticate(db, request(`burst-${round}-${i}`), policy, NOW, noEvent));
      t.same(outcomes(results), { 200: 5, '429 DEVICE_PENDING_FULL': 35 }, `round ${round}: five pending, the rest refused`);
      t.equal(await ids.pendingCount(dbs[0]!, 0), 5, `round ${round}: ${policy.maxPending} pending`);
      await deletePending(dbs[0]!, {}, 0);
    }
  });

  t.test(`${engine}: concurrent bulk rejections answer each id once`, async (t) => {
    const dbs = await openTestReplicas(t, engine, REPLICAS, 'updater-identity-race-');
    const policy: ids.EnrollmentPolicy = { enrollment: 'manual', maxPending: 1000, pendingTtl: 3600 };
    for (let round = 0; round < ROUNDS; round++) {
      const list = Array.from({ length: 30 }, (_, i) => `rej-${round}-${i}`);
      for (const id of list) await ids.authenticate(dbs[0]!, request(id), policy, NOW, noEvent);
      const results = await concurrently(dbs, 6, (db) => rejectPending(db, {}, 0, NOW));
      t.same(outcomes(results), { 200: 6 }, `round ${round}: every call answered 200`);
      t.same(fulfilled(results).flat().sort(), [...list].sort(), `round ${round}: each id answered rejected by exactly one call`);
    }
  });
}

// Played step by step rather than by a flood: the window is between preauthorize reading the
// ids and inserting them, and a device's first request must insert its pending row inside it.
// The device's transaction is held open by its own webhook step (onNewPending runs inside it)
// until the preauthorization waits on the row, then let go.
t.test('postgres: a preauthorization while the same device enrolls', async (t) => {
  const [replica1, replica2] = await openTestReplicas(t, 'postgres', 2, 'updater-identity-race-');
  const policy: ids.EnrollmentPolicy = { enrollment: 'manual', maxPending: 1000, pendingTtl: 3600 };
  let letGo!: () => void;
  const released = new Promise<void>((resolve) => (letGo = resolve));
  let inserted!: () => void;
  const pendingRow = new Promise<void>((resolve) => (inserted = resolve));
  const enrolled = ids.authenticate(replica1!, request('cam-1'), policy, NOW, async () => {
    inserted();
    await released;
  });
  await pendingRow;
  const operatorKey = key();
  const added = ids.preauthorize(replica2!, [{ device_id: 'cam-1', public_key: operatorKey }], NOW);
  for (const p of [enrolled, added]) p.catch(() => undefined);
  await until(async () => (await lockWaiters(replica2!)) >= 1);
  letGo();
  t.same(outcomes(await Promise.allSettled([enrolled, added])), { 200: 2 }, 'the device is pending and the preauthorization answered 200');
  t.same(await added.catch(() => null), ['cam-1'], 'the pending claim was replaced: added');
  t.match(await ids.identity(replica1!, 'cam-1'), { auth_state: 'preauthorized', public_key: operatorKey }, 'preauthorized with the operator\'s key');
});
