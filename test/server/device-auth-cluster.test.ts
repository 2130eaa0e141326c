import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { startCluster } from '../helpers/cluster.js';
import { authHttp, heartbeatHttp, TestDevice, tokenHttp } from '../helpers/device-auth.js';
import { firmware } from '../helpers/fixture.js';

// Two replicas on one PostgreSQL database with devices.auth on: a token issued by one is good
// on the other (the MAC key lives in the database), and a reject on one is refused by the
// other within 5 s (revocations are read from the database every 2 s and pushed to the
// front-ends); an id rejected before its first request stays refused on both, past a delete.

t.setTimeout(600_000);

t.test('a token works on every replica, and a reject on one is refused on the other within 5 s', async (t) => {
  const cluster = await startCluster(t, 2, [], { devices: { auth: 'on', enrollment: 'open' } });
  const [a, b] = cluster.replicas as [typeof cluster.replicas[0], typeof cluster.replicas[0]];
  const v1 = await cluster.fixture.writeBinary('v1.bin', firmware(4_000, 'cluster-auth'));
  t.equal((await adminCall(a.url, 'POST', '/admin/artifacts', { name: 'app', version: '1.0.0', binary: v1.path })).status, 200);
  const device = new TestDevice('roamer');
  const token = await tokenHttp(a.url, device);
  await eventually('replica b knows the track', () => heartbeatHttp(b.url, token, 'roamer', v1.hash), (r) => r.status === 200 && r.json.target_hash === v1.hash, 10_000);
  t.pass('a token issued by replica a is accepted by replica b');
  t.equal((await heartbeatHttp(b.url, token, 'impostor', v1.hash)).status, 403, 'and bound to its device there too');

  const request = device.request();
  t.equal((await authHttp(b.url, request)).status, 200, 'replica b verifies a request');
  t.equal((await authHttp(a.url, request)).status, 401, 'which cannot be replayed to replica a');

  const rejectedAt = Date.now();
  t.equal((await adminCall(a.url, 'POST', '/admin/devices/roamer/reject')).status, 200);
  await eventually('replica b refuses the token', () => heartbeatHttp(b.url, token, 'roamer', v1.hash), (r) => r.status === 401, 5_000);
  t.comment(`replica b refused the rejected device's token ${Date.now() - rejectedAt} ms after the reject on replica a`);
  t.equal((await heartbeatHttp(a.url, token, 'roamer', v1.hash)).status, 401, 'replica a refuses it too');

  // Issue 36, item 6: an id never seen is rejected on one replica and refused by the other.
  t.equal((await adminCall(a.url, 'POST', '/admin/devices/ghost/reject')).status, 200, 'replica a rejects an id it never saw');
  const ghost = await authHttp(b.url, new TestDevice('ghost').request());
  t.same([ghost.status, ghost.json?.error?.code], [403, 'DEVICE_NOT_ACCEPTED'], 'replica b refuses it, under open enrollment');
  t.equal((await adminCall(b.url, 'DELETE', '/admin/devices/ghost')).status, 200);
  t.equal((await authHttp(a.url, new TestDevice('ghost').request())).status, 403, 'a delete on replica b does not lift the rejection');
});
