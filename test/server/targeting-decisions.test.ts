import { readFile } from 'node:fs/promises';
import t from 'tap';
import { inCohort } from '../../src/shared/decision/cohort.js';
import { encodeHeartbeat } from '../../src/shared/wire/cbor.js';
import { adminCall, eventually } from '../helpers/admin.js';
import { heartbeatFieldsFor, manifestOf, startCoapTestServer } from '../helpers/coap.js';
import { firmware, makeFixture, nextVersion } from '../helpers/fixture.js';
import { postJson } from '../helpers/http.js';

// Targeting at the heartbeat, black-box over HTTP and CoAP (docs/rollouts.md, "Targeting"): a
// group step offers the target to the group's members only, and membership is judged at each
// heartbeat (a device tagged while the step runs is offered it at its next heartbeat; an
// attribute a heartbeat carries counts at once); a window closed for the device answers
// update_available false with retry_after; a start time a few seconds ahead is waited for, for real.

interface Answer { target_hash: string; update_available: boolean; retry_after?: number }

t.test('group steps, tags, attributes, windows and a start time decide who is offered the target', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(30_000, 'tg-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'tg-v2'));
  const other = await fixture.writeBinary('other.bin', firmware(10_000, 'tg-other'));
  const s = await startCoapTestServer(fixture, [{ name: 'other', version: '1', binary: other.path }], { store: { full_compression_level: 1 } });
  t.teardown(() => s.stop());
  const url = s.server.url;
  const admin = (method: string, path: string, body?: unknown) => adminCall(url, method, path, body);
  const fields = (deviceId: string, artifact: string, attributes?: Record<string, string>) =>
    ({ ...heartbeatFieldsFor(v1.hash, artifact), device_id: deviceId, ...(attributes ? { attributes } : {}) });
  const overHttp = async (deviceId: string, artifact: string, attributes?: Record<string, string>): Promise<Answer> => {
    const { status, json } = await postJson(`${url}/heartbeat`, fields(deviceId, artifact, attributes));
    if (status !== 200) throw new Error(`heartbeat ${status}: ${JSON.stringify(json)}`);
    return json as Answer;
  };
  const overCoap = async (deviceId: string, artifact: string, attributes?: Record<string, string>): Promise<Answer> => {
    const answer = await s.client.request({ method: 'POST', path: '/heartbeat', payload: encodeHeartbeat(fields(deviceId, artifact, attributes)), contentFormat: 60 });
    if (answer.code !== '2.05') throw new Error(`CoAP heartbeat ${answer.code}`);
    return manifestOf(answer) as unknown as Answer;
  };
  const both = async (deviceId: string, artifact: string, attributes?: Record<string, string>) =>
    [await overHttp(deviceId, artifact, attributes), await overCoap(deviceId, artifact, attributes)];
  const publishTwo = async (name: string, rollout: Record<string, unknown>) => {
    t.equal((await admin('POST', '/admin/artifacts', { name, version: '1', binary: v1.path })).status, 200);
    const answer = await admin('POST', '/admin/artifacts', { name, version: '2', binary: v2.path, rollout });
    t.equal(answer.status, 200, JSON.stringify(answer.json));
    return answer.json;
  };

  await t.test('a group step: only members, and a device tagged while it runs at its next heartbeat', async (t) => {
    t.equal((await admin('PUT', '/admin/groups/canary', { filter: { tags: ['canary'] } })).status, 200);
    await publishTwo('lab', { steps: [{ group: 'canary' }, 100], step_interval: 'manual' });
    for (const answer of await both('lab-1', 'lab')) t.equal(answer.target_hash, v1.hash, 'not tagged: the stable target');
    // The inventory records a heartbeat after answering it (within 50 ms): a device is tagged once it is there.
    await eventually('lab-1 in the inventory', () => admin('GET', '/admin/devices/lab-1'), (a) => a.status === 200);
    t.equal((await admin('PUT', '/admin/devices/lab-1/tags', { tags: ['canary'] })).status, 200);
    for (const answer of await both('lab-1', 'lab')) t.equal(answer.target_hash, v2.hash, 'tagged canary: offered the target at the next heartbeat');
    for (const answer of await both('lab-2', 'lab')) t.equal(answer.target_hash, v1.hash, 'another device is not');
    t.equal((await admin('PUT', '/admin/devices/lab-1/tags', { tags: [] })).status, 200);
    for (const answer of await both('lab-1', 'lab')) t.equal(answer.target_hash, v1.hash, 'untagged: no longer a member');
  });

  await t.test('attributes in the heartbeat decide membership at once, and are remembered when a heartbeat leaves them out', async (t) => {
    t.equal((await admin('PUT', '/admin/groups/rev-b', { filter: { attributes: { hw: 'B' } } })).status, 200);
    await publishTwo('sensor', { steps: [{ group: 'rev-b' }, 100], step_interval: 'manual' });
    for (const answer of await both('sensor-a', 'sensor', { hw: 'A' })) t.equal(answer.target_hash, v1.hash, 'hardware A: not a member');
    for (const answer of await both('sensor-b', 'sensor', { hw: 'B' })) t.equal(answer.target_hash, v2.hash, 'hardware B: offered');
    for (const answer of await both('sensor-b', 'sensor')) t.equal(answer.target_hash, v2.hash, 'without attributes: judged on the ones it sent last');
    const advanced = await admin('POST', '/admin/rollout', { artifact: 'sensor', action: 'advance' });
    t.equal(advanced.status, 200);
    t.equal(advanced.json.state, 'complete', 'the last step completes it');
    for (const answer of await both('sensor-a', 'sensor', { hw: 'A' })) t.equal(answer.target_hash, v2.hash, 'complete: everyone');
  });

  await t.test('outside the window: no update, and when to come back', async (t) => {
    const hour = (new Date().getUTCHours() + 3) % 24;
    const hh = (h: number) => `${String(h).padStart(2, '0')}:00`;
    await publishTwo('night', { steps: [99, 100], window: { start: hh(hour), end: hh((hour + 1) % 24), tz: 'UTC' } });
    const id = Array.from({ length: 500 }, (_, i) => `night-${i}`).find((d) => inCohort(d, v2.hash, 99))!;
    for (const answer of await both(id, 'night')) {
      t.equal(answer.update_available, false, 'not offered the target, though in the 99 % cohort');
      t.ok(answer.retry_after! > 3600 && answer.retry_after! <= 3 * 3600, `retry_after ${answer.retry_after} s: until the window opens`);
    }
  });

  await t.test('a start time a few seconds ahead: nobody before it, the cohort after it', async (t) => {
    const startAt = Math.ceil(Date.now() / 1000) + 3;
    const published = await publishTwo('later', { steps: [100], start_at: startAt });
    t.equal(published.rollout.state, 'scheduled');
    for (;;) {
      const [http, coap] = await both('later-1', 'later');
      const now = Date.now() / 1000;
      if (now < startAt) {
        t.equal(http!.target_hash, v1.hash, 'before start_at: the stable target (HTTP)');
        t.equal(coap!.target_hash, v1.hash, 'and over CoAP');
      } else if (http!.target_hash === v2.hash && coap!.target_hash === v2.hash) {
        t.pass(`offered ${(now - startAt).toFixed(1)} s after start_at`);
        break;
      }
      if (now > startAt + 20) throw new Error('the rollout did not start');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });
});
