import t from 'tap';
import { adminCall, eventually, listTracks, trackOf } from '../helpers/admin.js';
import { startCluster } from '../helpers/cluster.js';
import { firmware, nextVersion } from '../helpers/fixture.js';
import { heartbeatUntilSigned, metricValue } from '../helpers/http.js';
import { deviceHeartbeat } from '../helpers/rollout.js';

// Three replicas over one PostgreSQL database and one shared store directory (docs/scaling.md).

// Three replica starts: more than tap's 180 s on a loaded machine.
t.setTimeout(480_000);

// One cluster for both tests: a bring-up costs three replica starts. Each test has a track,
// binaries and device ids of its own, and counts generations as a difference, so neither
// can pass on what the other left behind.
const cluster = await startCluster(t, 3);

t.test('a change made on one replica is answered by the others within a second', async (t) => {
  const [a, b, c] = cluster.replicas as [typeof cluster.replicas[0], typeof cluster.replicas[0], typeof cluster.replicas[0]];
  const v1 = await cluster.fixture.writeBinary('v1.bin', firmware(200_000, 'cluster-1'));
  const v2 = await cluster.fixture.writeBinary('v2.bin', nextVersion(firmware(200_000, 'cluster-1'), 'cluster-2'));

  t.equal((await adminCall(a.url, 'POST', '/admin/artifacts', { name: 'app', version: '1', binary: v1.path })).status, 200);
  await eventually('v1 on every replica', () => Promise.all([b, c].map((r) => trackOf(r.url, 'app'))), (ts) => ts.every((tr) => tr?.hash === v1.hash), 10_000);

  // The publish of v2 on A: B and C answer devices with it within a second of A's answer.
  const published = await adminCall(a.url, 'POST', '/admin/artifacts', { name: 'app', version: '2', binary: v2.path });
  t.equal(published.status, 200);
  const answeredAt = Date.now();
  const seen = await Promise.all([b, c].map(async (r) => {
    await eventually(`v2 answered by ${r.url}`, () => deviceHeartbeat(r.url, 'dev-1', v1.hash, 'app'), (hb) => hb.json?.target_hash === v2.hash, 10_000);
    return Date.now() - answeredAt;
  }));
  t.comment(`publish on A answered by B after ${seen[0]} ms, by C after ${seen[1]} ms`);
  t.ok(seen.every((ms) => ms <= 1000), `seen by every replica within 1 s (${seen.join(', ')} ms)`);

  // B holds the binary A stored and serves the delta (generated once, by whichever replica was asked).
  const manifest = await heartbeatUntilSigned(b.url, v1.hash, 'app');
  t.equal(manifest.target_hash, v2.hash);
  const delta = await fetch(`${c.url}${manifest.delta_endpoint}`);
  t.equal(delta.status, 200, 'C serves the delta B had generated');
  t.equal(Number(delta.headers.get('content-length')), manifest.delta_size);
  await delta.arrayBuffer();

  // History, default, delete and rollout changes travel the same way.
  const listed = await listTracks(c.url);
  t.same(listed.artifacts.find((x) => x.artifact === 'app')?.history, [v1.hash], 'history is shared');
  t.equal((await adminCall(c.url, 'POST', '/admin/artifacts', { name: 'other', version: '1', binary: v1.path })).status, 200);
  t.equal((await adminCall(c.url, 'POST', '/admin/default', { artifact: 'other' })).status, 200);
  await eventually('default on A', () => listTracks(a.url), (l) => l.default === 'other', 10_000);
  t.equal((await adminCall(a.url, 'DELETE', '/admin/artifacts?artifact=other')).status, 200);
  await eventually('delete on B', () => trackOf(b.url, 'other'), (tr) => tr === undefined, 10_000);

  const v3 = await cluster.fixture.writeBinary('v3.bin', nextVersion(firmware(200_000, 'cluster-1'), 'cluster-3'));
  const rolled = await adminCall(b.url, 'POST', '/admin/artifacts', { name: 'app', version: '3', binary: v3.path, rollout: { steps: [10, 100], step_interval: '1h' } });
  t.equal(rolled.status, 200);
  await eventually('rollout on C', () => trackOf(c.url, 'app'), (tr) => tr?.rollout?.state === 'running' && tr.rollout.percent === 10, 10_000);
  t.equal((await adminCall(c.url, 'POST', '/admin/rollout', { artifact: 'app', action: 'pause' })).status, 200);
  const paused = await eventually('pause on A', () => trackOf(a.url, 'app'), (tr) => tr?.rollout?.state === 'paused', 10_000);
  t.equal(paused.rollout.paused_reason, 'operator');

  const health = await (await fetch(`${a.url}/health`)).json() as Record<string, unknown>;
  t.equal(health.database, 'ok', '/health names the database');
});

t.test('a new pair asked for by 100 devices across the replicas is generated once', async (t) => {
  const generated = async () => (await Promise.all(cluster.replicas.map(async (r) =>
    metricValue(await (await fetch(`${r.url}/metrics`)).text(), 'updater_delta_generations_total', { kind: 'delta', result: 'ok' }))));
  const before = await generated();
  const base = firmware(2_000_000, 'once-1');
  const v1 = await cluster.fixture.writeBinary('once-v1.bin', base);
  const v2 = await cluster.fixture.writeBinary('once-v2.bin', nextVersion(base, 'once-2'));
  const first = cluster.replicas[0]!;
  t.equal((await adminCall(first.url, 'POST', '/admin/artifacts', { name: 'once', version: '1', binary: v1.path })).status, 200);
  t.equal((await adminCall(first.url, 'POST', '/admin/artifacts', { name: 'once', version: '2', binary: v2.path })).status, 200);
  await eventually('v2 everywhere', () => Promise.all(cluster.replicas.map((r) => trackOf(r.url, 'once'))), (ts) => ts.every((tr) => tr?.hash === v2.hash), 10_000);

  // 100 devices at once, spread over the three replicas, all on v1.
  const answers = await Promise.all(Array.from({ length: 100 }, (_, i) =>
    deviceHeartbeat(cluster.replicas[i % 3]!.url, `once-dev-${i}`, v1.hash, 'once')));
  t.ok(answers.every((a) => a.status === 200 && a.json.target_hash === v2.hash), 'every device is answered with v2');
  const manifests = await Promise.all(cluster.replicas.map((r) => heartbeatUntilSigned(r.url, v1.hash, 'once', 120_000)));
  t.equal(new Set(manifests.map((m) => m.delta_hash)).size, 1, 'every replica offers the same delta');

  const generations = (await generated()).map((n, i) => n - before[i]!);
  t.comment(`delta generations per replica: ${generations.join(', ')}`);
  t.equal(generations.reduce((s, n) => s + n, 0), 1, 'exactly one delta generation in the cluster');
});
