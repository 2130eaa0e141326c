import { join } from 'node:path';
import t from 'tap';
import { publicKeyHex, readPrivateKeyFile } from '../../src/shared/signing.js';
import { adminCall } from '../helpers/admin.js';
import { expectExit, makeDevice, startUpdateWorld } from '../helpers/agent.js';

// Manual enrollment: the agent's first contact leaves it pending; it waits the server's
// retry_after (kept in its state, so a restart honours it too), and once the operator accepts
// its key the next cycle updates.

t.setTimeout(300_000);

t.test('a pending device waits retry_after, then updates once accepted', async (t) => {
  const world = await startUpdateWorld(t, 200_000, { devices: { auth: 'on', enrollment: 'manual' } });
  const keyFile = join(world.fixture.dir, 'pending.key');
  const device = await makeDevice(world.fixture, world.server.url, world.v1Bytes, { identity_key_file: keyFile });
  const before = Date.now();
  const first = await device.runOnce();
  expectExit(t, first, 1, 'a pending device ends its cycle with an error');
  t.ok(first.lines.some((l) => l.code === 'AGENT_ENROLLMENT_PENDING'), 'named AGENT_ENROLLMENT_PENDING');
  const state = await device.readState();
  t.ok(state.backoffUntil >= before + 59_000 && state.backoffUntil <= Date.now() + 61_000, `the next cycle waits the server's retry_after of 60 s (${state.backoffUntil - before} ms)`);
  const pending = (await adminCall(world.server.url, 'GET', '/admin/devices?auth_state=pending')).json.devices;
  const publicKey = publicKeyHex(await readPrivateKeyFile(keyFile));
  const name = pending.find((d: any) => d.public_key === publicKey)?.device_id;
  t.ok(name, 'the operator sees the device pending with its key');
  t.same(await device.current(), { slot: 'slot-a', hash: world.v1Hash }, 'nothing changed on the device');
  t.equal((await adminCall(world.server.url, 'POST', `/admin/devices/${name}/accept`)).status, 200);
  const second = await device.runOnce();
  expectExit(t, second);
  t.same(await device.current(), { slot: 'slot-b', hash: world.v2Hash }, 'accepted, it updates');
});
