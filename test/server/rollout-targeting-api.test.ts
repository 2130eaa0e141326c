import { readFile } from 'node:fs/promises';
import t from 'tap';
import { adminCall, eventually, trackOf } from '../helpers/admin.js';
import { firmware, makeFixture, nextVersion, randomHash } from '../helpers/fixture.js';
import { postJson } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';

// Rollouts with targeting through the admin API: a group step must name a group that exists
// (400 naming the step, nothing published), a rollout shows its step, start time and window,
// "advance" moves a manual rollout, a scheduled one says so, and a group a live rollout names
// cannot be deleted (409) until the rollout is complete or aborted.

t.test('group steps, manual steps, start time and window over the admin API', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(20_000, 'tg-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'tg-v2'));
  const v3 = await fixture.writeBinary('v3.bin', nextVersion(await readFile(v2.path), 'tg-v3'));
  const server = await startTestServer(fixture, [], { fleet: { flush_interval: '100ms' } });
  t.teardown(() => server.stop());
  const url = server.url;
  const call = (method: string, path: string, body?: unknown) => adminCall(url, method, path, body);
  const publish = (binary: string, version: string, rollout?: unknown) => call('POST', '/admin/artifacts', { name: 'app', version, binary, ...(rollout ? { rollout } : {}) });
  t.equal((await publish(v1.path, '1.0.0')).status, 200);
  t.equal((await postJson(`${url}/heartbeat`, { device_id: 'd1', version_hash: randomHash(), version: '0', hw_info: { arch: 'a', os: 'o', free_ram: 1, free_disk: 1 }, timestamp: 1, artifact: 'app' })).status, 200);

  const unknown = await publish(v2.path, '2.0.0', { steps: [{ group: 'canary' }, 5, 100], step_interval: 'manual' });
  t.match(unknown, { status: 400, json: { error: { code: 'INVALID_ROLLOUT' } } }, 'a step naming no group');
  t.ok(unknown.json.error.message.startsWith('rollout.steps[0].group '), unknown.json.error.message);
  t.equal((await trackOf(url, 'app')).hash, v1.hash, 'nothing was published');

  t.equal((await call('PUT', '/admin/groups/canary', { filter: { tags: ['canary'] } })).status, 200);
  const window = { days: ['sat', 'sun'], start: '01:00', end: '05:00', tz: 'device' };
  const started = await publish(v2.path, '2.0.0', { steps: [{ group: 'canary' }, 5, 100], step_interval: 'manual', window });
  t.equal(started.status, 200);
  t.match(started.json.rollout, { state: 'running', step: 0, percent: 0, steps: [{ group: 'canary' }, 5, 100], step_interval: 'manual', start_at: null, next_step_at: null, window: { ...window, days: ['sat', 'sun'] } });

  const inUse = await call('DELETE', '/admin/groups/canary');
  t.match(inUse, { status: 409, json: { error: { code: 'GROUP_IN_USE' } } }, 'a running rollout names it');
  t.equal((await call('GET', '/admin/groups/canary')).status, 200, 'and it is still there');

  const advanced = await call('POST', '/admin/rollout', { artifact: 'app', action: 'advance' });
  t.match(advanced, { status: 200, json: { state: 'running', step: 1, percent: 5 } });
  t.match(await call('POST', '/admin/rollout', { artifact: 'app', action: 'pause' }), { status: 200, json: { state: 'paused' } });
  t.match(await call('POST', '/admin/rollout', { artifact: 'app', action: 'advance' }), { status: 409, json: { error: { code: 'ROLLOUT_CONFLICT' } } }, 'not while paused');
  t.match(await call('POST', '/admin/rollout', { artifact: 'app', action: 'advance', rollback: true }), { status: 400 }, 'rollback goes only with abort');
  t.equal((await call('DELETE', '/admin/groups/canary')).status, 409, 'a paused rollout still names it');

  const startAt = Math.floor(Date.now() / 1000) + 3600;
  const scheduled = await publish(v3.path, '3.0.0', { steps: [5, 100], step_interval: '1h', start_at: startAt });
  t.match(scheduled.json.rollout, { state: 'scheduled', step: 0, percent: 0, start_at: startAt, next_step_at: startAt }, 'scheduled, and when it will move');
  t.match((await trackOf(url, 'app')).rollout, { state: 'scheduled' });
  t.same((await call('DELETE', '/admin/groups/canary')).json, { name: 'canary', filter: { tags: ['canary'] }, devices: 0 }, 'the replaced rollout is aborted: the group is free');
  t.match(await call('POST', '/admin/rollout', { artifact: 'app', action: 'complete' }), { status: 200, json: { state: 'complete', percent: 100 } }, 'complete applies to a scheduled rollout');

  for (const [rollout, field] of [
    [{ steps: [5, 100], window: { start: '02:00', end: '02:00', tz: 'UTC' } }, 'rollout.window.end'],
    [{ steps: [5, 100], window: { start: '02:00', end: '04:00', tz: 'Mars/Olympus' } }, 'rollout.window.tz'],
    [{ steps: [5, 100], start_at: 'saturday' }, 'rollout.start_at'],
  ] as const) {
    const refused = await publish(v2.path, '2.0.1', rollout);
    t.equal(refused.status, 400);
    t.ok(refused.json.error.message.startsWith(`${field} `), refused.json.error.message);
  }
  t.equal((await trackOf(url, 'app')).hash, v3.hash, 'nothing was published');

  // A real start time a few seconds ahead: scheduled until then, running from its first step after.
  const v4 = await fixture.writeBinary('v4.bin', nextVersion(await readFile(v3.path), 'tg-v4'));
  const soon = Math.floor(Date.now() / 1000) + 3;
  t.match((await publish(v4.path, '4.0.0', { steps: [5, 100], step_interval: '1h', start_at: soon })).json.rollout, { state: 'scheduled', percent: 0 });
  const running = await eventually('the start time passes', () => trackOf(url, 'app'), (tr) => tr?.rollout?.state === 'running', 20_000);
  t.ok(Date.now() / 1000 >= soon, 'not before its start time');
  t.match(running.rollout, { step: 0, percent: 5, start_at: soon });
  t.ok(running.rollout.next_step_at >= soon + 3600, 'the first interval counts from the start');
});
