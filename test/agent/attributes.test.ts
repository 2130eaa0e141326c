import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { expectExit, makeDevice, startUpdateWorld } from '../helpers/agent.js';
import { sha256Hex } from '../helpers/fixture.js';

// The agent sends its configured attributes with its heartbeats, over HTTP and over CoAP (the
// server's own CoAP listener), and the server stores them with the device; an agent without
// `attributes` in its configuration leaves what the server has.

const world = await startUpdateWorld(t, 100_000, { coap: true });

t.test('the agent\'s configured attributes reach the device record over both transports', async (t) => {
  const url = world.server.url;
  const overHttp = await makeDevice(world.fixture, url, world.v1Bytes, { device_id: 'attr-http', attributes: { site: 'lab', tz: 'Europe/Berlin' } });
  const overCoap = await makeDevice(world.fixture, 'unused', world.v1Bytes, { device_id: 'attr-coap', http_url: undefined, coap_url: world.coapUrl, primary: 'coap', attributes: { hw_rev: 'B' } });
  expectExit(t, await overHttp.runOnce());
  expectExit(t, await overCoap.runOnce());
  const stored = async (id: string) => (await adminCall(url, 'GET', `/admin/devices/${id}`)).json;
  t.same((await eventually('attr-http stored', () => stored('attr-http'), (d) => Object.keys(d?.attributes ?? {}).length === 2)).attributes, { site: 'lab', tz: 'Europe/Berlin' });
  const coap = await eventually('attr-coap stored', () => stored('attr-coap'), (d) => Object.keys(d?.attributes ?? {}).length === 1);
  t.same([coap.attributes, coap.transport], [{ hw_rev: 'B' }, 'coap']);

  // Without attributes in its configuration, the agent's heartbeats leave the stored set alone.
  // It runs another binary, so the record shows when its heartbeat is in.
  const bare = await makeDevice(world.fixture, url, world.strangerBytes, { device_id: 'attr-http' });
  expectExit(t, await bare.runOnce());
  await eventually('its heartbeat recorded', () => stored('attr-http'), (d) => d.version_hash === sha256Hex(world.strangerBytes));
  t.same((await stored('attr-http')).attributes, { site: 'lab', tz: 'Europe/Berlin' });
});
