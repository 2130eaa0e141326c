import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import t from 'tap';
import { adminCall } from '../helpers/admin.js';
import { expectExit, makeDevice, runUntilRunning } from '../helpers/agent.js';
import { firmware, makeFixture, nextVersion } from '../helpers/fixture.js';
import { heartbeatFieldsFor } from '../helpers/coap.js';
import { postJson } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';

// The agent sends its configured attributes with every heartbeat, and an update reaches it
// only through the group step that admits it, and not while its window is closed
// (docs/agent.md, "attributes"; docs/rollouts.md, "Targeting").

t.test('an update reaches the agent only through the group step or window that admits it', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(300_000, 'at1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'at2'));
  const server = await startTestServer(fixture, [{ name: 'legacy', version: '1.0.0', binary: v1.path }]);
  t.teardown(() => server.stop());
  const admin = (method: string, path: string, body?: unknown) => adminCall(server.url, method, path, body);
  t.equal((await admin('PUT', '/admin/groups/rev-b', { filter: { attributes: { hw: 'B' } } })).status, 200);
  const hour = (new Date().getUTCHours() + 3) % 24;
  const hh = (h: number) => `${String(h).padStart(2, '0')}:00`;
  for (const [name, window] of [['app', undefined], ['night', { start: hh(hour), end: hh((hour + 1) % 24), tz: 'device' }]] as const) {
    t.equal((await admin('POST', '/admin/artifacts', { name, version: '1.0.0', binary: v1.path })).status, 200);
    const rollout = { steps: [{ group: 'rev-b' }, 100], step_interval: 'manual', ...(window ? { window } : {}) };
    t.equal((await admin('POST', '/admin/artifacts', { name, version: '2.0.0', binary: v2.path, rollout })).status, 200);
  }
  // The delta is made before the devices ask (by a member's heartbeat), so that each cycle below either installs or has nothing to do.
  for (let i = 0; ; i++) {
    const { json } = await postJson(`${server.url}/heartbeat`, { ...heartbeatFieldsFor(v1.hash, 'app'), device_id: 'warm-up', attributes: { hw: 'B' }, delta_formats: ['bsdiff-lzma'] });
    if (json.signature) break;
    if (i > 600) throw new Error(`no signed delta: ${JSON.stringify(json)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const revA = await makeDevice(fixture, server.url, await readFile(v1.path), { attributes: { hw: 'A' } });
  const revB = await makeDevice(fixture, server.url, await readFile(v1.path), { attributes: { hw: 'B' } });
  const nightB = await makeDevice(fixture, server.url, await readFile(v1.path), { artifact: 'night', attributes: { hw: 'B', tz: 'UTC' } });

  await runUntilRunning(t, revB, v2.hash, 'a device whose attributes make it a member of the reached group step');
  for (let cycle = 0; cycle < 2; cycle++) {
    expectExit(t, await revA.runOnce());
    expectExit(t, await nightB.runOnce());
  }
  t.equal((await revA.current()).hash, v1.hash, 'hardware A: not a member, not updated');
  t.equal((await nightB.current()).hash, v1.hash, 'a member whose window (device time, UTC) is closed: not updated');
  const device = await admin('GET', `/admin/devices/${basename(revB.configPath, '.yaml')}`);
  t.same(device.json.attributes, { hw: 'B' }, 'the server stored the attributes the agent sent');
});
