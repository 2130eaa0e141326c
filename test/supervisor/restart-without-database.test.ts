import { once } from 'node:events';
import t from 'tap';
import { loadConfigFile } from '../../src/shared/config/load.js';
import type { UpdaterError } from '../../src/shared/errors.js';
import { startServer } from '../../src/supervisor/index.js';
import { adminCall, eventually, trackOf } from '../helpers/admin.js';
import { relayedDatabase } from '../helpers/cluster.js';
import { firmware, freePort, nextVersion } from '../helpers/fixture.js';
import { heartbeat, metricValue } from '../helpers/http.js';
import { ACTOR_NODE_OPTIONS } from '../helpers/node-options.js';
import { configDocument, writeConfig } from '../helpers/server.js';

// A cluster replica whose actors crash while PostgreSQL is away. The fleet actor and the
// manifester cannot start without the database in a cluster, and each start that fails used to
// count as one more crash: a few seconds of outage after one crash, and the supervisor gave up
// and stopped a replica that was still answering devices from memory. A start refused for want
// of the database is now tried again, at the policy's longest delay, as long as the outage
// lasts; the actor comes back with the database.

t.test('actors that crash while the database is away are started again once it is back, and the replica keeps serving', async (t) => {
  const { fixture, relay } = await relayedDatabase(t, 'updater-restart-db-');
  const base = firmware(40_000, 'restart-db');
  const v1 = await fixture.writeBinary('v1.bin', base);
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(base, 'restart-db-2'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [], { database: relay.url }));
  let fatal: UpdaterError | undefined;
  // Three crashes within the minute are too many: the first failed start past that would have
  // been the end of the replica.
  const supervisor = await startServer(loadConfigFile(configPath), {
    actorNodeOptions: ACTOR_NODE_OPTIONS,
    restartPolicy: { maxRestarts: 2, windowMs: 60_000, baseDelayMs: 20, maxDelayMs: 100 },
    onFatal: (err) => (fatal = err),
  });
  t.teardown(() => supervisor.stop());
  t.equal((await adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '1', binary: v1.path })).status, 200);
  t.equal((await adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '2', binary: v2.path })).status, 200);
  t.equal((await heartbeat(url, v2.hash, 'app')).status, 200, 'a device on the target is answered');

  await relay.cut();
  await eventually('the replica sees the database gone', () => fetch(`${url}/health`).then((r) => r.json() as Promise<Record<string, unknown>>), (h) => h.database === 'unreachable', 20_000);
  const failures = async (actor: string) => fetch(`${url}/metrics`).then(
    async (r) => metricValue(await r.text(), 'updater_actor_start_failures_total', { actor, code: 'DATABASE_UNREACHABLE' }),
    () => -1, // the server has stopped: `fatal` says why
  );
  for (const name of ['fleet', 'manifester'] as const) {
    const worker = supervisor.actor(name)!.worker!;
    worker.terminate(); // from outside, unannounced: a crash
    await once(worker, 'exit');
    await eventually(`${name}: five starts refused for want of the database, or the supervisor gave up`, async () => ({ fatal: fatal?.message, failures: await failures(name) }), (s) => s.fatal !== undefined || s.failures >= 5, 30_000);
    t.equal(fatal, undefined, `the supervisor did not give up on the replica when the ${name} could not start`);
    if (fatal) return;
  }
  // A refusal is audited after it is answered, its row handed to the fleet actor unawaited:
  // lost now, and counted, and it must not take the HTTP front-end down with it.
  t.equal((await adminCall(url, 'GET', '/admin/devices', undefined, 'not-a-token')).status, 401, 'an admin request with a wrong token is refused');
  const metric = async (name: string, labels: Record<string, string> = {}) => metricValue(await (await fetch(`${url}/metrics`)).text(), name, labels);
  const afterRefusal = await eventually('the refusal\'s audit row counted as lost, or the HTTP front-end gone',
    async () => {
      try {
        return { lost: await metric('updater_admin_audit_rows_lost_total'), httpRestarts: await metric('updater_actor_restarts_total', { actor: 'http' }) };
      } catch {
        return { httpDown: true }; // nobody answers on the HTTP port
      }
    },
    (m) => 'httpDown' in m || m.lost >= 1 || m.httpRestarts >= 1, 30_000);
  t.same(afterRefusal, { lost: 1, httpRestarts: 0 }, 'the audit row is counted as lost and the HTTP front-end runs on');
  const answered = await heartbeat(url, v2.hash, 'app');
  t.equal(answered.status, 200, 'a device on the target is still answered, from the front-end\'s last decisions');
  t.equal(answered.json.update_available, false);
  t.notOk(supervisor.actor('fleet')!.ready, 'the fleet actor is not running meanwhile');
  const refused = await adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '3', binary: v1.path });
  t.equal(refused.status, 503, 'an admin write is refused meanwhile');
  // At once, since the fleet actor is known to be away; not after its audit call's deadline.
  t.match(refused.json.error?.message, /fleet (is not connected|went away before it answered)/, 'for the reason that the fleet actor is away');

  await relay.restore();
  await eventually('the fleet actor and the manifester run again', async () => [supervisor.actor('fleet')!.ready, supervisor.actor('manifester')!.ready], (r) => r.every(Boolean), 30_000);
  await eventually('the replica reaches the database again', () => fetch(`${url}/health`).then((r) => r.json() as Promise<Record<string, unknown>>), (h) => h.database === 'ok' && h.status === 'ok', 30_000);
  t.equal(fatal, undefined, 'the supervisor never gave up');
  t.equal((await trackOf(url, 'app'))?.hash, v2.hash, 'the restarted manifester read the tracks back from the database');
  t.equal((await heartbeat(url, v1.hash, 'app')).status, 200, 'a device owed an update is answered');
  await eventually('the restarted fleet actor records heartbeats', () => adminCall(url, 'GET', '/admin/devices/device-0001'), (a) => a.status === 200 && a.json.version_hash === v1.hash, 20_000);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  t.equal(metricValue(metrics, 'updater_actor_restarts_total', { actor: 'fleet' }), 1, 'one crash, one restart counted');
});
