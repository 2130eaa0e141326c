import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { Engine } from '../../../../src/shared/database/schema.js';
import { adminCall, eventually } from '../../../helpers/admin.js';
import { firmware, freePort, type Fixture } from '../../../helpers/fixture.js';
import { metricValue, postJson } from '../../../helpers/http.js';
import { configDocument, spawnServer, writeConfig, type ServerProcess } from '../../../helpers/server.js';
import { startWebhookFixture, type Receiver } from '../../../helpers/webhook-receiver.js';
import { WEBHOOK_EVENT_TYPES } from '../../../../src/shared/webhooks/events.js';

// The webhook tests on each database engine (webhooks.test.ts on SQLite,
// webhooks-postgres.test.ts on PostgreSQL), as test/server/fleet-inventory-case.ts does: one
// file per engine, and the cluster's test in webhooks-cluster.test.ts, because the retry
// schedule (5 s, then 10 s) and the server restarts take real time: both engines and the
// cluster in one file ran past tap's 180 s per-file limit on a loaded machine.

export const SECRET = 'webhook-secret-0123456789abcdef';

export async function secretFile(fixture: Fixture): Promise<string> {
  const path = join(fixture.dir, 'webhook.secret');
  await writeFile(path, `${SECRET}\n`);
  return path;
}

interface Setup {
  fixture: Fixture;
  receiver: Receiver;
  configPath: string;
  url: string;
  server: ServerProcess;
  v1: { path: string; hash: string };
}

async function setUp(t: Test, engine: 'sqlite' | 'postgres'): Promise<Setup> {
  const { fixture, database, receiver, secretFile: secret } = await startWebhookFixture(t, engine, 'updater-webhooks-', SECRET);
  const v1 = await fixture.writeBinary('v1.bin', firmware(32 * 1024, 'wh-v1'));
  const port = await freePort();
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [{ name: 'base', version: '1', binary: v1.path }], {
    log_level: 'info', database: database.location, fleet: { flush_interval: '100ms' },
    webhooks: [{ url: receiver.url, secret_file: secret, events: [...WEBHOOK_EVENT_TYPES] }],
  }));
  const url = `http://127.0.0.1:${port}`;
  const setup: Setup = { fixture, receiver, configPath, url, server: await spawnServer(configPath, url), v1 };
  t.teardown(async () => {
    setup.server.child.kill('SIGKILL');
    await setup.server.exited;
  });
  return setup;
}

export const ok = async (call: Promise<{ status: number; json: any }>) => {
  const answer = await call;
  if (answer.status !== 200) throw new Error(`admin call answered ${answer.status}: ${JSON.stringify(answer.json)}`);
  return answer.json;
};

/**
 * The delivery, retry and kill -9 tests on `engine`, one after another against one server, its
 * database and its receiver: a spawned server's start and a fresh database were most of each
 * test's CPU. Each test begins with nothing waiting in the outbox (the one before it ends so)
 * and judges the events, requests and counts it adds to what the earlier ones left.
 */
export function webhookCases(engine: Engine): void {
  const shared = setUp(t, engine);
  shared.catch(() => undefined);

  t.test(`${engine}: every change is one signed CloudEvent, delivered in order`, async (t) => {
    const { fixture, receiver, url, v1 } = await shared;
    const v2 = await fixture.writeBinary('v2.bin', firmware(32 * 1024, 'wh-v2'));
    const arrived = (n: number) => eventually(`${n} events delivered`, async () => receiver.accepted.length, (len) => len >= n, 30_000);
    const steps: [string, () => Promise<unknown>][] = [
      ['updater.track.published', () => ok(adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '2', binary: v2.path }))],
      ['updater.track.published', () => ok(adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '1', binary: v1.path, rollout: { steps: [20, 100], step_interval: '1h' } }))],
      ['updater.rollout.started', async () => undefined],
      ['updater.rollout.paused', () => ok(adminCall(url, 'POST', '/admin/rollout', { artifact: 'app', action: 'pause' }))],
      ['updater.rollout.resumed', () => ok(adminCall(url, 'POST', '/admin/rollout', { artifact: 'app', action: 'resume' }))],
      ['updater.rollout.step', () => ok(adminCall(url, 'POST', '/admin/rollout', { artifact: 'app', percent: 60 }))],
      ['updater.rollout.completed', () => ok(adminCall(url, 'POST', '/admin/rollout', { artifact: 'app', action: 'complete' }))],
      ['updater.device.update_failed', async () => {
        const answer = await postJson(`${url}/report`, { device_id: 'dev-1', previous_hash: v2.hash, new_hash: v1.hash, success: false, rollback_reason: 'boot check failed', timestamp: 1_800_000_000 });
        if (answer.status !== 204) throw new Error(`report answered ${answer.status}`);
      }],
      ['updater.track.removed', () => ok(adminCall(url, 'DELETE', '/admin/artifacts?artifact=app'))],
    ];
    for (const [i, [, act]] of steps.entries()) {
      await act();
      if (i !== 1) await arrived(i + 1);
    }
    t.same(receiver.accepted.map((e) => e.type), steps.map(([type]) => type), 'in the order they happened');
    t.ok(receiver.requests.every((r) => r.signatureValid), 'every request carried a valid X-Updater-Signature');
    t.equal(new Set(receiver.accepted.map((e) => e.id)).size, receiver.accepted.length, 'each event once, with its own id');
    for (const e of receiver.accepted) {
      t.match(e, { specversion: '1.0', source: '/updater' });
      t.ok(!Number.isNaN(Date.parse(e.time)), 'time is an RFC 3339 timestamp');
    }
    t.match(receiver.accepted[0]!.data, { artifact: 'app', version: '2', hash: v2.hash });
    t.match(receiver.accepted[2]!.data, { artifact: 'app', rollout: { state: 'running', percent: 20 } });
    t.match(receiver.accepted[5]!.data, { artifact: 'app', rollout: { state: 'running', percent: 60 } });
    t.match(receiver.accepted[7]!.data, { device_id: 'dev-1', new_hash: v1.hash, rollback_reason: 'boot check failed' });

    const state = await adminCall(url, 'GET', '/admin/webhooks');
    t.equal(state.status, 200);
    t.match(state.json.webhooks, [{ url: receiver.url, pending: 0, delivered: steps.length, failed: 0, next_attempt_at: null }]);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    t.equal(metricValue(metrics, 'updater_webhook_attempts_total', { webhook: '0', result: 'delivered' }), steps.length);
    t.notMatch(metrics, new RegExp(receiver.url.replace(/[/.]/g, '\\$&')), 'the URL (a chat webhook\'s holds its token) is not in /metrics');
  });

  t.test(`${engine}: a receiver that fails its first attempts gets the event, retried within 10 s, then backing off`, async (t) => {
    const { fixture, receiver, url } = await shared;
    const retries = async () => metricValue(await (await fetch(`${url}/metrics`)).text(), 'updater_webhook_attempts_total', { webhook: '0', result: 'retry' });
    const [acceptedBefore, requestsBefore, retriesBefore] = [receiver.accepted.length, receiver.requests.length, await retries()];
    receiver.failNext(2);
    const v2 = await fixture.writeBinary('v2-retry.bin', firmware(32 * 1024, 'wh-retry'));
    await ok(adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '2', binary: v2.path }));
    await eventually('a failed attempt is shown', async () => (await adminCall(url, 'GET', '/admin/webhooks')).json, (s) => s.failures.length > 0, 20_000);
    const state = (await adminCall(url, 'GET', '/admin/webhooks')).json;
    t.match(state.failures[0], { type: 'updater.track.published', state: 'pending', last_status: 500, last_error: 'answered 500' });
    t.ok(state.webhooks[0].next_attempt_at !== null, 'the next attempt is scheduled');
    await eventually('delivered', async () => receiver.accepted.length, (n) => n === acceptedBefore + 1, 40_000);
    const requests = receiver.requests.slice(requestsBefore);
    const attempts = requests.map((r) => r.at);
    t.same(requests.map((r) => r.status), [500, 500, 204]);
    const first = attempts[1]! - attempts[0]!;
    const second = attempts[2]! - attempts[1]!;
    t.ok(first <= 10_000, `first retry after ${first} ms`);
    t.ok(second >= first * 1.5, `then a longer wait (${second} ms)`);
    t.equal(await retries(), retriesBefore + 2, 'two attempts counted as retries');
  });

  t.test(`${engine}: an event recorded before a kill -9 is delivered after the restart, once`, async (t) => {
    const setup = await shared;
    const { fixture, receiver, url } = setup;
    const deliveredBefore = (await adminCall(url, 'GET', '/admin/webhooks')).json.webhooks[0].delivered;
    const [acceptedBefore, requestsBefore] = [receiver.accepted.length, receiver.requests.length];
    receiver.down(true);
    const v3 = await fixture.writeBinary('v3-kill.bin', firmware(32 * 1024, 'wh-kill'));
    await ok(adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '3', binary: v3.path }));
    await eventually('an attempt was refused', async () => receiver.requests.length, (n) => n >= requestsBefore + 1, 20_000);
    t.equal((await adminCall(url, 'GET', '/admin/webhooks')).json.webhooks[0].pending, 1, 'the event waits in the outbox');
    setup.server.child.kill('SIGKILL');
    await setup.server.exited;
    receiver.down(false);
    setup.server = await spawnServer(setup.configPath, url);
    const delivered = await eventually('delivered after the restart', async () => receiver.accepted.slice(acceptedBefore), (a) => a.length >= 1, 30_000);
    t.match(delivered[0], { type: 'updater.track.published', data: { artifact: 'app', hash: v3.hash } });
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    t.equal(receiver.accepted.length, acceptedBefore + 1, 'once');
    t.match((await adminCall(url, 'GET', '/admin/webhooks')).json.webhooks[0], { pending: 0, delivered: deliveredBefore + 1 });
  });
}
