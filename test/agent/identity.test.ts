import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { publicKeyHex, readPrivateKeyFile } from '../../src/shared/signing.js';
import { adminCall } from '../helpers/admin.js';
import { expectExit, logged, makeDevice, startUpdateWorld, type Device } from '../helpers/agent.js';
import { metricValue } from '../helpers/http.js';

// The real agent with an identity against a server with devices.auth on and manual enrollment,
// over HTTP and over CoAP: it makes its key at first start, waits as pending for the server's
// retry_after, is accepted by the operator, updates v1 → v2, keeps its token across restarts,
// and authenticates again when the server refuses its token.

t.setTimeout(300_000);

const world = await startUpdateWorld(t, 300_000, { coap: true, devices: { auth: 'on', enrollment: 'open' } });

async function enrollsAndUpdates(t: Test, device: Device, keyFile: string): Promise<void> {
  const first = await device.runOnce();
  expectExit(t, first);
  const key = await stat(keyFile);
  t.equal(key.mode & 0o777, 0o600, 'the identity key was made at first start, mode 0600');
  t.match(await readFile(keyFile, 'utf8'), /^-----BEGIN PRIVATE KEY-----/, 'as PKCS#8 PEM');
  t.ok(logged(first, 'device authenticated'));
  t.same(await device.current(), { slot: 'slot-b', hash: world.v2Hash }, 'and the update was applied');
  const name = /device_id: (\S+)/.exec(await readFile(device.configPath, 'utf8'))![1]!;
  const record = (await adminCall(world.server.url, 'GET', `/admin/devices/${name}`)).json;
  t.equal(record.public_key, publicKeyHex(await readPrivateKeyFile(keyFile)), 'the server bound the device to that key');
  t.equal(record.auth_state, 'accepted');

  const boot = await device.runOnce();
  expectExit(t, boot);
  t.ok(logged(boot, 'update confirmed'));
  t.notOk(logged(boot, 'device authenticated'), 'a restart keeps the token: no second enrollment');

  // The operator rejects and accepts the device again: its old token is revoked, and the next
  // cycle authenticates again by itself.
  await adminCall(world.server.url, 'POST', `/admin/devices/${name}/reject`);
  await adminCall(world.server.url, 'POST', `/admin/devices/${name}/accept`);
  const again = await device.runOnce();
  expectExit(t, again);
  t.ok(logged(again, 'device token refused; authenticating again'), 'the refused token was noticed');
  t.ok(logged(again, 'device authenticated'), 'and replaced');
}

t.test('over HTTP: enrolls, updates, keeps its token, authenticates again when refused', async (t) => {
  const keyFile = join(world.fixture.dir, 'http-identity.key');
  const device = await makeDevice(world.fixture, world.server.url, world.v1Bytes, { identity_key_file: keyFile });
  await enrollsAndUpdates(t, device, keyFile);
});

t.test('over CoAP: the same, the token riding as Uri-Query auth=', async (t) => {
  const keyFile = join(world.fixture.dir, 'coap-identity.key');
  const device = await makeDevice(world.fixture, 'unused', world.v1Bytes, { http_url: undefined, coap_url: world.coapUrl, primary: 'coap', identity_key_file: keyFile });
  await enrollsAndUpdates(t, device, keyFile);
  const metrics = await (await fetch(`${world.server.url}/metrics`)).text();
  t.ok(metricValue(metrics, 'updater_transfer_bytes_total', { kind: 'delta', transport: 'coap' }) > 0, 'the delta travelled over CoAP');
});

t.test('an agent without an identity is refused by a server with auth on, and changes nothing', async (t) => {
  const device = await makeDevice(world.fixture, world.server.url, world.v1Bytes);
  const run = await device.runOnce();
  expectExit(t, run, 1);
  t.same(await device.current(), { slot: 'slot-a', hash: world.v1Hash });
});
