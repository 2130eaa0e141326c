import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { encodeHeartbeat } from '../../src/shared/wire/cbor.js';
import { adminCall, trackOf } from '../helpers/admin.js';
import { heartbeatFieldsFor, manifestOf, startCoapTestServer } from '../helpers/coap.js';
import { firmware, makeFixture, nextVersion, randomHash } from '../helpers/fixture.js';
import { getBytes, metricValue } from '../helpers/http.js';
import { cohortIds, deviceHeartbeat } from '../helpers/rollout.js';

// Staged rollouts through the admin API (docs/rollouts.md): the cohort decides
// before rows 2-7, the stable target answers everyone else, the operator's commands and the
// states that refuse them, over HTTP and CoAP alike.

t.test('a staged rollout through the admin API', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(40_000, 'ro-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'ro-v2'));
  const v3 = await fixture.writeBinary('v3.bin', nextVersion(await readFile(v2.path), 'ro-v3'));
  const other = await fixture.writeBinary('other.bin', firmware(10_000, 'ro-other'));
  const s = await startCoapTestServer(fixture, [
    { name: 'other', version: '1.0.0', binary: other.path },
  ], { store: { full_compression_level: 1, state_file: join(fixture.dir, 'state.json') } });
  t.teardown(() => s.stop());
  const url = s.server.url;
  const publish = (body: Record<string, unknown>) => adminCall(url, 'POST', '/admin/artifacts', body);
  // Rollouts are for API tracks: a configured track refuses API publishes (TRACK_CONFIGURED).
  t.equal((await publish({ name: 'app', version: '1.0.0', binary: v1.path })).status, 200);
  t.equal((await adminCall(url, 'POST', '/admin/default', { artifact: 'app' })).status, 200);
  const rollout = (body: Record<string, unknown>) => adminCall(url, 'POST', '/admin/rollout', body);
  const [inside] = cohortIds(v2.hash, 10, true, 1);
  const [outside] = cohortIds(v2.hash, 10, false, 1);

  await t.test('bad rollout objects are refused with INVALID_ROLLOUT and change nothing', async (t) => {
    for (const bad of [{ steps: [10, 50] }, { steps: [50, 20, 100] }, { steps: [10, 100], max_failure_rate: 2 }, { steps: [10, 100], step_interval: 'often' }, { steps: [10, 100], min_reports: -3 }, 'soon']) {
      const answer = await publish({ name: 'app', version: '2.0.0', binary: v2.path, rollout: bad });
      t.equal(answer.status, 400, JSON.stringify(bad));
      t.equal(answer.json.error.code, 'INVALID_ROLLOUT');
    }
    t.equal((await trackOf(url, 'app')).hash, v1.hash, 'the track is untouched');
  });

  await t.test('publishing with a rollout starts it at its first step; the track shows the target', async (t) => {
    const answer = await publish({ name: 'app', version: '2.0.0', binary: v2.path, rollout: { steps: [10, 50, 100], step_interval: '1h', max_failure_rate: 0.1, min_reports: 10 } });
    t.equal(answer.status, 200);
    t.match(answer.json, { hash: v2.hash, version: '2.0.0', rollout: { target_hash: v2.hash, target_version: '2.0.0', stable_hash: v1.hash, percent: 10, state: 'running', paused_reason: null, steps: [10, 50, 100], step_interval: '1h', reports: { success: 0, failure: 0 } } });
    t.ok(answer.json.rollout.next_step_at > Date.now() / 1000 + 3000, 'the next step is an hour away');
    t.match((await trackOf(url, 'app')).rollout, { state: 'running', percent: 10 });
    const health = await getBytes(`${url}/health`);
    t.match(JSON.parse(health.body.toString()).artifacts.app, { hash: v2.hash, version: '2.0.0' });
    t.equal((await trackOf(url, 'other')).rollout, null, 'a track without a rollout shows null');
  });

  await t.test('the cohort gets the target, the others the stable target, no one is downgraded', async (t) => {
    const inAnswer = await deviceHeartbeat(url, inside!, v1.hash, 'app');
    t.match(inAnswer.json, { update_available: true, target_hash: v2.hash, target_version: '2.0.0' }, 'in the cohort: offered the target');
    const outAnswer = await deviceHeartbeat(url, outside!, v1.hash, 'app');
    t.match(outAnswer.json, { update_available: false, target_hash: v1.hash, target_version: '1.0.0' }, 'outside: already on the stable target');
    const onTarget = await deviceHeartbeat(url, outside!, v2.hash, 'app');
    t.match(onTarget.json, { update_available: false, target_hash: v2.hash }, 'a device already on the target stays');
    const stranger = await deviceHeartbeat(url, outside!, randomHash(), 'app');
    t.match(stranger.json, { update_available: false, target_hash: v1.hash }, 'an unknown binary outside the cohort: row 7 against the stable target');
    const viaDefault = await deviceHeartbeat(url, inside!, v1.hash);
    t.equal(viaDefault.json.target_hash, v2.hash, 'the default track decides alike');
  });

  await t.test('CoAP answers the cohort alike', async (t) => {
    const coap = async (id: string, hash: string) => manifestOf(await s.client.request({ method: 'POST', path: '/heartbeat', contentFormat: 60, payload: encodeHeartbeat({ ...heartbeatFieldsFor(hash, 'app'), device_id: id }) }));
    t.match(await coap(inside!, v1.hash), { update_available: true, target_hash: v2.hash });
    t.match(await coap(outside!, v1.hash), { update_available: false, target_hash: v1.hash });
  });

  await t.test('POST /admin/rollout refuses bad bodies and unknown rollouts', async (t) => {
    const cases: [unknown, number, string][] = [
      [{ artifact: 'app' }, 400, 'INVALID_FIELD'],
      [{ artifact: 'app', action: 'pause', percent: 5 }, 400, 'INVALID_FIELD'],
      [{ artifact: 'app', action: 'explode' }, 400, 'INVALID_FIELD'],
      [{ artifact: 'app', percent: 101 }, 400, 'INVALID_FIELD'],
      [{ artifact: 'app', percent: '5' }, 400, 'INVALID_FIELD'],
      [{ artifact: 'app', action: 'pause', rollback: true }, 400, 'INVALID_FIELD'],
      [{ artifact: 'app', action: 'pause', extra: 1 }, 400, 'INVALID_FIELD'],
      [{ artifact: '../x', action: 'pause' }, 400, 'INVALID_ARTIFACT_KEY'],
      [{ artifact: 'nope', action: 'pause' }, 404, 'ARTIFACT_NOT_FOUND'],
      [{ artifact: 'other', action: 'pause' }, 404, 'ROLLOUT_NOT_FOUND'],
      [{ artifact: 'app', action: 'resume' }, 409, 'ROLLOUT_CONFLICT'],
    ];
    for (const [body, status, code] of cases) {
      const answer = await rollout(body as Record<string, unknown>);
      t.equal(answer.status, status, JSON.stringify(body));
      t.equal(answer.json?.error?.code, code, JSON.stringify(body));
    }
    t.equal((await adminCall(url, 'GET', '/admin/rollout')).status, 405);
    t.equal((await adminCall(url, 'POST', '/admin/rollout', { artifact: 'app', action: 'pause' }, null)).status, 401);
  });

  await t.test('pause holds the cohort back, resume lets it on, percent widens it', async (t) => {
    const paused = await rollout({ artifact: 'app', action: 'pause' });
    t.equal(paused.status, 200);
    t.match(paused.json, { state: 'paused', paused_reason: 'operator', next_step_at: null, percent: 10 });
    t.match((await deviceHeartbeat(url, inside!, v1.hash, 'app')).json, { update_available: false, target_hash: v1.hash }, 'paused: the cohort gets the stable target');
    t.match((await deviceHeartbeat(url, inside!, v2.hash, 'app')).json, { update_available: false, target_hash: v2.hash }, 'paused: devices on the target stay');
    t.equal((await rollout({ artifact: 'app', action: 'pause' })).status, 409, 'pausing twice is a conflict');
    const resumed = await rollout({ artifact: 'app', action: 'resume' });
    t.match(resumed.json, { state: 'running', paused_reason: null });
    t.equal((await deviceHeartbeat(url, inside!, v1.hash, 'app')).json.target_hash, v2.hash);
    const wider = await rollout({ artifact: 'app', percent: 50 });
    t.match(wider.json, { state: 'running', percent: 50 });
    const [newcomer] = cohortIds(v2.hash, 50, true, 1, 'late').filter((id) => !cohortIds(v2.hash, 10, true, 200, 'late').includes(id));
    t.equal((await deviceHeartbeat(url, newcomer!, v1.hash, 'app')).json.target_hash, v2.hash, 'a device between 10 and 50 % now gets it');
    const metrics = (await getBytes(`${url}/metrics`)).body.toString();
    t.equal(metricValue(metrics, 'updater_rollout_percent', { artifact: 'app' }), 50);
    t.equal(metricValue(metrics, 'updater_rollout_state', { artifact: 'app', state: 'running' }), 1);
    t.equal(metricValue(metrics, 'updater_rollout_state', { artifact: 'app', state: 'paused' }), 0);
  });

  await t.test('a new publish replaces the rollout; devices on the old target are not sent back', async (t) => {
    const answer = await publish({ name: 'app', version: '3.0.0', binary: v3.path, rollout: { steps: [10, 100], step_interval: '1h' } });
    t.equal(answer.status, 200);
    t.match(answer.json.rollout, { target_hash: v3.hash, stable_hash: v1.hash, state: 'running', percent: 10 }, 'the stable target is still the last one that reached 100 %');
    const [away] = cohortIds(v3.hash, 10, false, 1);
    t.match((await deviceHeartbeat(url, away!, v2.hash, 'app')).json, { update_available: false }, 'a device on the replaced target is not downgraded');
    t.match((await deviceHeartbeat(url, away!, v1.hash, 'app')).json, { update_available: false, target_hash: v1.hash });
    const [near] = cohortIds(v3.hash, 10, true, 1);
    t.match((await deviceHeartbeat(url, near!, v2.hash, 'app')).json, { update_available: true, target_hash: v3.hash }, 'but moves forward in the new cohort');
  });

  await t.test('abort with rollback sends devices on the target back to the stable target', async (t) => {
    const aborted = await rollout({ artifact: 'app', action: 'abort', rollback: true });
    t.match(aborted.json, { state: 'aborted', rollback: true, next_step_at: null });
    const [near] = cohortIds(v3.hash, 10, true, 1);
    t.match((await deviceHeartbeat(url, near!, v3.hash, 'app')).json, { update_available: true, target_hash: v1.hash, target_version: '1.0.0' }, 'offered the stable target');
    for (const action of ['pause', 'resume', 'complete', 'abort']) t.equal((await rollout({ artifact: 'app', action })).status, 409, `${action} after abort`);
    t.equal((await rollout({ artifact: 'app', percent: 20 })).status, 409, 'percent after abort');
  });
});
