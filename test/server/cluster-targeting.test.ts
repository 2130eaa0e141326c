import { readFile } from 'node:fs/promises';
import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { startCluster } from '../helpers/cluster.js';
import { firmware, nextVersion } from '../helpers/fixture.js';
import { deviceHeartbeat } from '../helpers/rollout.js';

// Targeting in a cluster (docs/rollouts.md, "Targeting"): groups and tags live in the shared
// database, so a tag set on one replica decides the answers of the other within 2 s, and a
// group step started on one replica admits the same devices on every replica.

t.setTimeout(480_000);

t.test('a tag set on one replica is honoured by the other replica\'s answers', async (t) => {
  const cluster = await startCluster(t, 2);
  const [a, b] = cluster.replicas as [typeof cluster.replicas[0], typeof cluster.replicas[0]];
  const v1 = await cluster.fixture.writeBinary('v1.bin', firmware(100_000, 'ct-1'));
  const v2 = await cluster.fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'ct-2'));
  t.equal((await adminCall(a.url, 'PUT', '/admin/groups/canary', { filter: { tags: ['canary'] } })).status, 200);
  t.equal((await adminCall(a.url, 'POST', '/admin/artifacts', { name: 'app', version: '1', binary: v1.path })).status, 200);
  const published = await adminCall(a.url, 'POST', '/admin/artifacts', { name: 'app', version: '2', binary: v2.path, rollout: { steps: [{ group: 'canary' }, 100], step_interval: 'manual' } });
  t.equal(published.status, 200, JSON.stringify(published.json));
  const onB = () => deviceHeartbeat(b.url, 'cl-dev-1', v1.hash, 'app');
  await eventually('the rollout on B', onB, (hb) => hb.status === 200 && hb.json.target_hash === v1.hash, 10_000);
  t.equal((await deviceHeartbeat(a.url, 'cl-dev-1', v1.hash, 'app')).json.target_hash, v1.hash, 'not tagged: the stable target on A too');
  await eventually('cl-dev-1 in the inventory', () => adminCall(a.url, 'GET', '/admin/devices/cl-dev-1'), (r) => r.status === 200, 10_000);

  t.equal((await adminCall(a.url, 'PUT', '/admin/devices/cl-dev-1/tags', { tags: ['canary'] })).status, 200);
  t.equal((await deviceHeartbeat(a.url, 'cl-dev-1', v1.hash, 'app')).json.target_hash, v2.hash, 'A: offered at the next heartbeat');
  const taggedAt = Date.now();
  await eventually('B offers it too', onB, (hb) => hb.json.target_hash === v2.hash, 10_000);
  t.comment(`the tag set on A decided B's answer after ${Date.now() - taggedAt} ms (documented bound: 2 s)`);
  t.equal((await deviceHeartbeat(b.url, 'cl-dev-2', v1.hash, 'app')).json.target_hash, v1.hash, 'B: an untagged device is not offered it');
});
