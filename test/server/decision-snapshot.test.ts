import { readFile } from 'node:fs/promises';
import t from 'tap';
import { encodeHeartbeat } from '../../src/shared/wire/cbor.js';
import { adminCall } from '../helpers/admin.js';
import { heartbeatFieldsFor, manifestOf, startCoapTestServer } from '../helpers/coap.js';
import { firmware, makeFixture, nextVersion } from '../helpers/fixture.js';
import { metricValue, postJson } from '../helpers/http.js';
import { cohortIds } from '../helpers/rollout.js';

// The front-ends answer the steady state from the manifester's snapshot (docs/architecture.md,
// "The heartbeat path"). What a device must be able to rely on: an operator's publish,
// rollout command or abort has reached every front-end when the admin call returns, so the
// next heartbeat over either transport is answered by it; and the steady state really is
// answered without the manifester (counted by updater_heartbeats_answered_total).

t.test('a change is answered by the next heartbeat on both transports, and the steady state never leaves the front-end', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(30_000, 'ds-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'ds-v2'));
  const v3 = await fixture.writeBinary('v3.bin', nextVersion(await readFile(v2.path), 'ds-v3'));
  const other = await fixture.writeBinary('other.bin', firmware(10_000, 'ds-other'));
  const s = await startCoapTestServer(fixture, [{ name: 'other', version: '1', binary: other.path }], { store: { full_compression_level: 1 } });
  t.teardown(() => s.stop());
  const url = s.server.url;
  const publish = (body: Record<string, unknown>) => adminCall(url, 'POST', '/admin/artifacts', body);
  const rollout = (body: Record<string, unknown>) => adminCall(url, 'POST', '/admin/rollout', body);
  const overHttp = async (deviceId: string, versionHash: string) => {
    const { status, json } = await postJson(`${url}/heartbeat`, { ...heartbeatFieldsFor(versionHash, 'app'), device_id: deviceId });
    t.equal(status, 200);
    return json as { target_hash: string; update_available: boolean };
  };
  const overCoap = async (deviceId: string, versionHash: string) => {
    const answer = await s.client.request({ method: 'POST', path: '/heartbeat', payload: encodeHeartbeat({ ...heartbeatFieldsFor(versionHash, 'app'), device_id: deviceId }), contentFormat: 60 });
    t.equal(answer.code, '2.05');
    return manifestOf(answer) as { target_hash: string; update_available: boolean };
  };
  const both = async (deviceId: string, versionHash: string) => [await overHttp(deviceId, versionHash), await overCoap(deviceId, versionHash)];

  await t.test('every publish is the answer of the very next heartbeat', async (t) => {
    const binaries = [v1, v2, v3];
    for (let i = 0; i < 12; i++) {
      const b = binaries[i % 3]!;
      t.equal((await publish({ name: 'app', version: `1.${i}`, binary: b.path })).status, 200);
      for (const answer of await both('dev-steady', other.hash)) t.equal(answer.target_hash, b.hash, `publish ${i}: answered toward it at once`);
    }
  });

  await t.test('a rollout, its completion and an abort with rollback are answered by the next heartbeat', async (t) => {
    t.equal((await publish({ name: 'app', version: '2.0', binary: v1.path })).status, 200);
    const [outside] = cohortIds(v2.hash, 1, false, 1, 'ds');
    t.equal((await publish({ name: 'app', version: '3.0', binary: v2.path, rollout: { steps: [1, 100], step_interval: '1h' } })).status, 200);
    for (const answer of await both(outside!, v1.hash)) t.equal(answer.update_available, false, 'outside the 1 % cohort: stays on the stable target');
    t.equal((await rollout({ artifact: 'app', action: 'complete' })).status, 200);
    for (const answer of await both(outside!, v1.hash)) t.equal(answer.target_hash, v2.hash, 'completed: offered the target by the next heartbeat');

    t.equal((await publish({ name: 'app', version: '4.0', binary: v3.path, rollout: { steps: [50, 100], step_interval: '1h' } })).status, 200);
    for (const answer of await both('ds-on-target', v3.hash)) t.equal(answer.update_available, false, 'a device on the target is up to date');
    t.equal((await rollout({ artifact: 'app', action: 'abort', rollback: true })).status, 200);
    for (const answer of await both('ds-on-target', v3.hash)) t.equal(answer.target_hash, v2.hash, 'aborted with rollback: sent back to the stable target at once');
  });

  await t.test('up-to-date heartbeats are answered by the front-ends, not the manifester', async (t) => {
    t.equal((await publish({ name: 'app', version: '5.0', binary: v1.path })).status, 200);
    const metrics = async () => (await fetch(`${url}/metrics`)).text();
    const before = await metrics();
    for (let i = 0; i < 20; i++) for (const answer of await both(`ds-up-${i}`, v1.hash)) t.equal(answer.update_available, false);
    const after = await metrics();
    const by = (text: string, who: string) => metricValue(text, 'updater_heartbeats_answered_total', { by: who });
    t.equal(by(after, 'snapshot') - by(before, 'snapshot'), 40, 'all 40 from the snapshot');
    t.equal(by(after, 'manifester') - by(before, 'manifester'), 0, 'none through the manifester');
    t.ok(metricValue(after, 'updater_decision_snapshot_bytes', { thread: 'http' }) > 0, 'the snapshot\'s weight is published per thread');
    t.ok(metricValue(after, 'updater_decision_snapshot_bytes', { thread: 'coap' }) > 0);
  });
});
