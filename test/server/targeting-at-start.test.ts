import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { encodeHeartbeat } from '../../src/shared/wire/cbor.js';
import { adminCall, eventually } from '../helpers/admin.js';
import { heartbeatFieldsFor, manifestOf, startCoapTestServer } from '../helpers/coap.js';
import { firmware, makeFixture, nextVersion } from '../helpers/fixture.js';
import { deviceHeartbeat } from '../helpers/rollout.js';

// A front-end judges a rollout's group steps by its decision snapshot (the manifester's) and
// its targeting index (the fleet's), which it asks for when it starts and holds milliseconds
// later. A heartbeat in that gap was answered from what the front-end had: without a snapshot
// it went on to the manifester, which knows no group, and without the index no device was a
// member of any group. Either way a member of the canary group step was answered as if outside
// it (update_available false: the stable target). A test hook holds each back in turn for a
// second after a restart; a member's heartbeats over HTTP and CoAP at once must get the
// group's answer, the target, and a device outside the group still must not.

t.setTimeout(120_000);

const HOLD_MS = '1000';

t.test('a group member heartbeating at once after a start is offered the target, before the front-end holds its snapshot or its targeting index', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(20_000, 'tas-1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'tas-2'));
  const overrides = { store: { full_compression_level: 1, state_file: join(fixture.dir, 'state.json') }, fleet: { flush_interval: '100ms' } };

  const first = await startCoapTestServer(fixture, [], overrides);
  const url1 = first.server.url;
  t.equal((await adminCall(url1, 'POST', '/admin/artifacts', { name: 'app', version: '1', binary: v1.path })).status, 200, 'version 1 published');
  for (const id of ['member', 'outsider']) t.equal((await deviceHeartbeat(url1, id, v1.hash, 'app')).status, 200, `${id} on version 1`);
  await eventually('the member in the inventory', () => adminCall(url1, 'GET', '/admin/devices/member'), (d) => d.status === 200, 10_000);
  t.equal((await adminCall(url1, 'PUT', '/admin/devices/member/tags', { tags: ['canary'] })).status, 200, 'the member tagged canary');
  t.equal((await adminCall(url1, 'PUT', '/admin/groups/canary', { filter: { tags: ['canary'] } })).status, 200, 'the group canary made');
  const published = await adminCall(url1, 'POST', '/admin/artifacts', { name: 'app', version: '2', binary: v2.path, rollout: { steps: [{ group: 'canary' }, 100], step_interval: 'manual' } });
  t.match(published.json.rollout, { state: 'running', step: 0, percent: 0 }, 'the rollout is at its group step');
  t.match((await deviceHeartbeat(url1, 'member', v1.hash, 'app')).json, { update_available: true, target_hash: v2.hash }, 'the member is offered the target');
  t.match((await deviceHeartbeat(url1, 'outsider', v1.hash, 'app')).json, { update_available: false, target_hash: v1.hash }, 'the outsider is not');
  await first.stop();

  for (const held of ['UPDATER_TEST_FIRST_SNAPSHOT_DELAY_MS', 'UPDATER_TEST_FIRST_TARGETING_INDEX_DELAY_MS']) {
    // The worker threads read the environment they start with.
    process.env.UPDATER_TEST_HOOKS = '1';
    process.env[held] = HOLD_MS;
    const again = await startCoapTestServer(fixture, [], overrides).finally(() => {
      delete process.env.UPDATER_TEST_HOOKS;
      delete process.env[held];
    });
    try {
      await heartbeatsAtOnce(held, again);
    } finally {
      await again.stop();
    }
  }

  async function heartbeatsAtOnce(held: string, again: Awaited<ReturnType<typeof startCoapTestServer>>): Promise<void> {
    const overCoap = async (deviceId: string) => {
      const answer = await again.client.request({ method: 'POST', path: '/heartbeat', payload: encodeHeartbeat({ ...heartbeatFieldsFor(v1.hash, 'app'), device_id: deviceId }), contentFormat: 60 });
      return answer.code === '2.05' ? manifestOf(answer) : { code: answer.code };
    };
    // At once, before the held part arrives.
    const [http, coap, outsider] = await Promise.all([deviceHeartbeat(again.server.url, 'member', v1.hash, 'app'), overCoap('member'), deviceHeartbeat(again.server.url, 'outsider', v1.hash, 'app')]);
    t.match(http.json, { update_available: true, target_hash: v2.hash }, `${held}: the member over HTTP is offered the target`);
    t.match(coap, { update_available: true, target_hash: v2.hash }, `${held}: the member over CoAP is offered the target`);
    t.match(outsider.json, { update_available: false, target_hash: v1.hash }, `${held}: the outsider is not`);
  }
});
