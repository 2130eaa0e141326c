import { execFileSync } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { adminCall, eventually, listTracks, trackOf } from '../helpers/admin.js';
import { startCluster, startNginx, type Cluster } from '../helpers/cluster.js';
import { firmware, nextVersion, sha256Hex } from '../helpers/fixture.js';
import { getBytes, heartbeat, heartbeatUntilSigned, metricValue } from '../helpers/http.js';
import { runUpdater, spawnUpdater } from '../helpers/server.js';
import { needs } from '../helpers/system-tools.js';

// Faults of a cluster (docs/scaling.md): a replica killed under load, a replica killed in the
// middle of a delta generation, the database lost under load. Loads are small and bounded.

async function publishPair(cluster: Cluster, size: number, seed: string): Promise<{ v1: { path: string; hash: string }; v2: { path: string; hash: string } }> {
  const base = firmware(size, `${seed}-1`);
  const v1 = await cluster.fixture.writeBinary(`${seed}-v1.bin`, base);
  const v2 = await cluster.fixture.writeBinary(`${seed}-v2.bin`, nextVersion(base, `${seed}-2`));
  const url = cluster.replicas[0]!.url;
  for (const [version, binary] of [['1', v1.path], ['2', v2.path]]) {
    const answer = await adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version, binary });
    if (answer.status !== 200) throw new Error(`publish answered ${answer.status}: ${JSON.stringify(answer.json)}`);
  }
  await eventually('v2 on every replica', () => Promise.all(cluster.replicas.map((r) => trackOf(r.url, 'app'))), (ts) => ts.every((tr) => tr?.hash === v2.hash), 10_000);
  return { v1, v2 };
}

/** The replica's last log lines at warn and above (pino levels 40 to 60). */
const warningsOf = (replica: Cluster['replicas'][0]) => replica.process.output().split('\n').filter((l) => /"level":[456]0/.test(l)).slice(-20).join('\n');

const realErrors = (errors: Record<string, number>) => Object.entries(errors).filter(([kind]) => kind !== 'client_saturated');

// Three replica starts per test and bounded loads: more than tap's 180 s on a loaded machine.
t.setTimeout(600_000);

t.test('kill -9 of a replica under load through nginx: every device still updates', needs('nginx'), async (t) => {
  const cluster = await startCluster(t, 3);
  const { v1 } = await publishPair(cluster, 50_000, 'k9load');
  // The delta exists before the load starts, so devices download from any replica.
  await Promise.all(cluster.replicas.map((r) => heartbeatUntilSigned(r.url, v1.hash, 'app')));
  const nginx = await startNginx(t, cluster.fixture.dir, cluster.replicas.map((r) => r.port));
  const victim = cluster.replicas[1]!;

  const devices = 300;
  // Every device is updated within about 3 s; --until-updated ends the load then, and
  // --duration bounds it.
  const load = runUpdater(['load', '--url', nginx.url, '--devices', String(devices), '--rate', '150', '--duration', '15s',
    '--old-share', '1', '--admin-token-file', cluster.fixture.tokenPath, '--until-updated', '--json'], 120_000);
  // Kill once the load is well under way (nginx has logged requests to every replica).
  await eventually('load reaches every replica', () => nginx.accessLog(), (lines) => cluster.replicas.every((r) => lines.filter((l) => l.includes(`:${r.port} `)).length >= 20), 60_000);
  const killedAt = Date.now() / 1000;
  await cluster.kill(victim);
  const result = await load;
  t.equal(result.code, 0, result.stderr);
  const report = JSON.parse(result.stdout);
  t.comment(`load: ${report.heartbeats} heartbeats, ${report.updates_applied} updates in ${report.seconds.toFixed(1)} s, errors ${JSON.stringify(report.errors)}`);
  t.equal(report.updates_applied, devices, 'every simulated device finished its update');
  t.equal(report.ended, 'updated', 'and the load ended because of it');

  const lines = await nginx.accessLog();
  const failed = lines.filter((l) => Number(l.split(' ')[1]) >= 500);
  const elsewhere = failed.filter((l) => !l.includes(`127.0.0.1:${victim.port}`));
  // Updates went on after the kill, on the replicas left: devices downloaded and reported then.
  const survivorsAfter = lines.filter((l) => Number(l.split(' ')[0]) > killedAt && Number(l.split(' ')[1]) < 300 && /"POST \/report /.test(l) && !l.includes(`127.0.0.1:${victim.port}`));
  t.ok(survivorsAfter.length > 0, `devices reported updates to the replicas left after the kill (${survivorsAfter.length})`);
  t.same(elsewhere, [], `every failed request had gone to the killed replica (${failed.length} failed)`);
  if (elsewhere.length > 0) t.comment(`nginx error log:\n${(await nginx.errorLog()).join('\n')}`);
  // A request that was on the killed replica when it died ended after the kill.
  const inFlightOnVictim = lines.filter((l) => l.includes(`127.0.0.1:${victim.port}`) && Number(l.split(' ')[0]) >= killedAt - 0.5).length;
  const errors = realErrors(report.errors).reduce((s, [, n]) => s + n, 0);
  t.ok(errors <= inFlightOnVictim, `the ${errors} errors are at most the ${inFlightOnVictim} requests in flight on the killed replica`);
});

t.test('a replica killed in the middle of a generation: no partial file, another takes the job over', needs('zstd', 'bspatch'), async (t) => {
  const cluster = await startCluster(t, 2);
  // Large enough that the diff runs for a while on this machine.
  const { v1, v2 } = await publishPair(cluster, 12_000_000, 'k9gen');
  const [first, second] = cluster.replicas as [Cluster['replicas'][0], Cluster['replicas'][0]];
  const name = `${v1.hash}_${v2.hash}.delta.zst`;
  const deltas = join(cluster.fixture.dir, 'shared-store', 'deltas');
  const scratch = join(cluster.fixture.dir, 'shared-store', 'work', 'gen');

  const pending = await heartbeat(first.url, v1.hash, 'app');
  t.ok(pending.json.retry_after > 0, 'generation started on the first replica');
  await eventually('the diff is under way', () => readdir(scratch).catch(() => [] as string[]), (names) => names.includes(name), 30_000);
  await cluster.kill(first);
  t.notOk((await readdir(deltas)).includes(name), 'no delta exists under its final name after the kill');

  const manifest = await heartbeatUntilSigned(second.url, v1.hash, 'app', 180_000);
  const generated = metricValue(await (await fetch(`${second.url}/metrics`)).text(), 'updater_delta_generations_total', { kind: 'delta', result: 'ok' });
  t.equal(generated, 1, 'the second replica generated the delta itself');
  t.notOk((await readdir(scratch)).includes(name), 'the dead replica\'s scratch space is gone');
  const { body } = await getBytes(`${second.url}${manifest.delta_endpoint}`);
  t.equal(sha256Hex(body), manifest.delta_hash);
  await writeFile(join(cluster.fixture.dir, 'd.zst'), body);
  execFileSync('zstd', ['-d', '-q', '-f', join(cluster.fixture.dir, 'd.zst'), '-o', join(cluster.fixture.dir, 'd.patch')]);
  execFileSync('bspatch', [v1.path, join(cluster.fixture.dir, 'out.bin'), join(cluster.fixture.dir, 'd.patch')]);
  t.equal(sha256Hex(await readFile(join(cluster.fixture.dir, 'out.bin'))), v2.hash, 'the delta rebuilds the target');
});

t.test('the database lost and back under load: devices are answered, admin writes 503, no track is lost', async (t) => {
  const cluster = await startCluster(t, 2);
  const { v1, v2 } = await publishPair(cluster, 50_000, 'dbcut');
  // Both patch formats exist before the cut: half the simulated fleet names bsdiff-lzma
  // (src/load/fleet.ts), and this story is about answering from what is there, not generating.
  await Promise.all(cluster.replicas.flatMap((r) => [heartbeatUntilSigned(r.url, v1.hash, 'app'), heartbeatUntilSigned(r.url, v1.hash, 'app', 60_000, undefined, ['bsdiff-lzma'])]));
  const v3 = await cluster.fixture.writeBinary('dbcut-v3.bin', nextVersion(await readFile(v2.path), 'dbcut-3'));
  const [a, b] = cluster.replicas as [Cluster['replicas'][0], Cluster['replicas'][0]];

  // The load runs until the database is back (SIGINT ends it with its report); --duration
  // only bounds it.
  const load = spawnUpdater(['load', '--url', a.url, '--devices', '200', '--rate', '100', '--duration', '60s',
    '--old-share', '0.5', '--admin-token-file', cluster.fixture.tokenPath, '--json'], 120_000);
  t.teardown(() => load.child.kill('SIGKILL'));
  await new Promise((r) => setTimeout(r, 1500));
  await cluster.relay.cut();
  const health = (url: string) => fetch(`${url}/health`).then((r) => r.json() as Promise<Record<string, unknown>>);
  await eventually('both replicas see the database gone', () => Promise.all([a, b].map((r) => health(r.url))), (hs) => hs.every((h) => h.database === 'unreachable' && h.status === 'degraded'), 20_000);
  // Twice in clean-clone CI runs the replica closed this request's connection unanswered: its
  // fleet actor's thread had died of the lost connection, and after six failed restarts the
  // supervisor stopped the replica (fixed in src/shared/database/pool-errors.ts). Should it
  // happen again, the failure carries what the replica logged at warn and above.
  const writeStarted = Date.now();
  const refused = await adminCall(b.url, 'POST', '/admin/artifacts', { name: 'app', version: '3', binary: v3.path }).catch((err: Error & { cause?: Error }) => {
    throw new Error(`the admin write to replica ${b.index} failed after ${Date.now() - writeStarted} ms (${err.cause?.message ?? err.message}); what it logged at warn and above:\n${warningsOf(b)}`);
  });
  t.equal(refused.status, 503, 'an admin write is refused');
  t.equal(refused.json.error.code, 'DATABASE_UNREACHABLE');
  t.equal((await trackOf(b.url, 'app'))?.hash, v2.hash, 'the refused publish changed nothing');
  const answered = await heartbeat(b.url, v1.hash, 'app');
  t.equal(answered.status, 200, 'heartbeats are answered from memory');
  t.equal(answered.json.target_hash, v2.hash);

  await cluster.relay.restore();
  await eventually('both replicas reach the database again', () => Promise.all([a, b].map((r) => health(r.url))), (hs) => hs.every((h) => h.database === 'ok'), 30_000);
  // And on for at least a second with the database back: two more of the load's progress
  // lines (one a second).
  const progressSoFar = load.stderr().length;
  await eventually('the load goes on with the database back', async () => load.stderr().slice(progressSoFar), (more) => (more.match(/t=\d+s/g) ?? []).length >= 2, 30_000);
  load.child.kill('SIGINT');
  const result = await load.done;
  t.equal(result.code, 0, result.stderr);
  const report = JSON.parse(result.stdout);
  t.equal(report.ended, 'stopped', `the load ran from before the cut until after the database was back (${report.seconds.toFixed(1)} s, ${report.heartbeats} heartbeats)`);
  t.same(realErrors(report.errors), [], 'no device request failed while the database was gone');

  t.equal((await adminCall(b.url, 'POST', '/admin/artifacts', { name: 'app', version: '3', binary: v3.path })).status, 200, 'admin writes work again');
  await eventually('v3 on the other replica', () => trackOf(a.url, 'app'), (tr) => tr?.hash === v3.hash, 10_000);
  const listed = await listTracks(a.url);
  t.same(listed.artifacts.find((x) => x.artifact === 'app')?.history, [v2.hash, v1.hash], 'every published target is still recorded');
});
