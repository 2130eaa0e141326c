import { once } from 'node:events';
import t from 'tap';
import { afterFailedStart, decideRestart } from '../../src/supervisor/restart-policy.js';
import { firmware, makeFixture } from '../helpers/fixture.js';
import { heartbeat, metricValue } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';
import { ACTOR_NODE_OPTIONS } from '../helpers/node-options.js';

t.test('restart policy', async (t) => {
  const policy = { maxRestarts: 3, windowMs: 1000, baseDelayMs: 100, maxDelayMs: 250 };
  const first = decideRestart([], 10_000, policy);
  t.same(first, { action: 'restart', delayMs: 100, recent: [10_000] });
  const second = decideRestart([9_900], 10_000, policy);
  t.equal(second.action, 'restart');
  t.equal((second as { delayMs: number }).delayMs, 200, 'the backoff doubles');
  const third = decideRestart([9_800, 9_900], 10_000, policy);
  t.equal((third as { delayMs: number }).delayMs, 250, 'and is capped');
  t.equal(decideRestart([9_700, 9_800, 9_900], 10_000, policy).action, 'escalate', 'too many crashes in the window: give up');
  t.equal(decideRestart([1_000, 2_000, 3_000], 10_000, policy).action, 'restart', 'old crashes fall out of the window');
  t.same(afterFailedStart('DATABASE_UNREACHABLE', policy), { action: 'retry', delayMs: 250 }, 'a start refused for want of the database is tried again at the longest delay');
  t.same(afterFailedStart('INTERNAL', policy), { action: 'crash' }, 'any other failed start is one more crash');
  t.same(afterFailedStart('ACTOR_TIMEOUT', policy), { action: 'crash' });
});

t.test('a crashed actor is restarted and the server keeps answering', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(50_000, 'restart'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }]);
  t.teardown(() => server.stop());

  for (const name of ['manifester', 'store-keeper'] as const) {
    const before = server.supervisor.actor(name)!.worker!;
    before.terminate(); // from outside, unannounced: the supervisor sees an unexpected exit
    await once(before, 'exit');
    const deadline = Date.now() + 20_000;
    let answer = await heartbeat(server.url, v2.hash);
    // Until the new worker is ready: the front-ends answer heartbeats from their decision
    // snapshot meanwhile, so an answer alone does not say the actor is back.
    while ((answer.status !== 200 || server.supervisor.actor(name)!.worker === before || !server.supervisor.actor(name)!.ready) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      answer = await heartbeat(server.url, v2.hash);
    }
    t.equal(answer.status, 200, `heartbeats are answered again after the ${name} crashed`);
    t.equal(answer.json.update_available, false);
    t.not(server.supervisor.actor(name)!.worker, before, `${name} runs in a new worker`);
  }
  const health = await (await fetch(`${server.url}/health`)).json();
  t.same(health, { status: 'ok', store: 'writable', artifacts: { app: { version: '2', hash: v2.hash } } }, 'the restarted manifester rebuilt its tracks');
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  t.equal(metricValue(metrics, 'updater_actor_restarts_total', { actor: 'manifester' }), 1);
  t.equal(metricValue(metrics, 'updater_actor_restarts_total', { actor: 'store-keeper' }), 1);
});

t.test('an actor that keeps crashing makes the supervisor give up loudly', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(10_000, 'escalate'));
  let fatal: Error | undefined;
  const { startServer } = await import('../../src/supervisor/index.js');
  const { loadConfigFile } = await import('../../src/shared/config/load.js');
  const boot = await startTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }]);
  await boot.stop();
  const supervisor = await startServer(loadConfigFile(boot.configPath), {
    actorNodeOptions: ACTOR_NODE_OPTIONS,
    restartPolicy: { maxRestarts: 2, windowMs: 60_000, baseDelayMs: 10, maxDelayMs: 10 },
    onFatal: (err) => (fatal = err),
  });
  t.teardown(() => supervisor.stop());
  for (let crash = 0; crash < 3 && !fatal; crash++) {
    const deadline = Date.now() + 20_000;
    while (!supervisor.actor('manifester')?.ready && !fatal && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const worker = supervisor.actor('manifester')!.worker!;
    worker.terminate();
    await once(worker, 'exit');
  }
  const deadline = Date.now() + 20_000;
  while (!fatal && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  t.ok(fatal, 'the supervisor escalated');
  t.match(fatal?.message, /manifester crashed 3 times/);
});
