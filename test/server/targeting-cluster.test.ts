import t from 'tap';
import { adminCall, eventually, trackOf } from '../helpers/admin.js';
import { startCluster } from '../helpers/cluster.js';
import { firmware, nextVersion, randomHash } from '../helpers/fixture.js';
import { postJson } from '../helpers/http.js';

// Attributes, tags and groups in a cluster of two replicas over one PostgreSQL database: what
// one replica stores the other reads, a publish on one checks its group steps against the
// shared groups, and the other refuses to delete a group that rollout names.

t.setTimeout(300_000);

t.test('targeting across two replicas', async (t) => {
  const cluster = await startCluster(t, 2, [], { fleet: { flush_interval: '100ms' } });
  const [a, b] = cluster.replicas as [typeof cluster.replicas[0], typeof cluster.replicas[0]];
  const v1 = await cluster.fixture.writeBinary('v1.bin', firmware(50_000, 'tc-1'));
  const v2 = await cluster.fixture.writeBinary('v2.bin', nextVersion(firmware(50_000, 'tc-1'), 'tc-2'));
  t.equal((await adminCall(a.url, 'POST', '/admin/artifacts', { name: 'app', version: '1', binary: v1.path })).status, 200);
  const beat = { device_id: 'd1', version_hash: randomHash(), version: '0', hw_info: { arch: 'a', os: 'o', free_ram: 1, free_disk: 1 }, timestamp: 1, artifact: 'app', attributes: { site: 'lab' } };
  t.equal((await postJson(`${a.url}/heartbeat`, beat)).status, 200);

  const onB = await eventually('d1 with its attributes on B', () => adminCall(b.url, 'GET', '/admin/devices/d1'), (d) => d.json?.attributes?.site === 'lab', 10_000);
  t.same(onB.json.tags, []);
  t.same((await adminCall(b.url, 'PUT', '/admin/devices/d1/tags', { tags: ['canary'] })).json.tags, ['canary'], 'tagged on B');
  t.same((await adminCall(a.url, 'PUT', '/admin/groups/canary', { filter: { tags: ['canary'] } })).json.devices, 1, 'counted on A');
  t.same((await adminCall(b.url, 'GET', '/admin/groups')).json.groups.map((g: any) => [g.name, g.devices]), [['canary', 1]], 'listed on B');

  const published = await adminCall(b.url, 'POST', '/admin/artifacts', { name: 'app', version: '2', binary: v2.path, rollout: { steps: [{ group: 'canary' }, 100], step_interval: 'manual' } });
  t.equal(published.status, 200, 'B finds the group A made');
  await eventually('the rollout on A', () => trackOf(a.url, 'app'), (tr) => tr?.rollout?.state === 'running', 10_000);
  t.match(await adminCall(a.url, 'DELETE', '/admin/groups/canary'), { status: 409, json: { error: { code: 'GROUP_IN_USE' } } }, 'A refuses to delete what B\'s rollout names');
  t.equal((await adminCall(a.url, 'POST', '/admin/rollout', { artifact: 'app', action: 'abort' })).status, 200);
  await eventually('the abort on B', () => trackOf(b.url, 'app'), (tr) => tr?.rollout?.state === 'aborted', 10_000);
  t.equal((await adminCall(b.url, 'DELETE', '/admin/groups/canary')).status, 200, 'then B deletes it');
  t.same((await adminCall(a.url, 'GET', '/admin/groups')).json.groups, [], 'and it is gone on A');
});
