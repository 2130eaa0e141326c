import t from 'tap';
import { expectExit, logged, makeDevice, startUpdateWorld } from '../helpers/agent.js';
import { metricValue } from '../helpers/http.js';

// The agent against the server's own CoAP front-end (coap.test.ts covers resume and failover
// through an observing bridge).

t.test('v1 to v2 by delta over the real CoAP front-end, confirmed and reported over CoAP', async (t) => {
  const world = await startUpdateWorld(t, 300_000, { coap: true });
  const device = await makeDevice(world.fixture, 'unused', world.v1Bytes, { http_url: undefined, coap_url: world.coapUrl, primary: 'coap' });
  const run = await device.runOnce();
  expectExit(t, run);
  t.same(await device.current(), { slot: 'slot-b', hash: world.v2Hash });
  const boot = await device.runOnce();
  expectExit(t, boot);
  t.ok(logged(boot, 'update confirmed'));
  const metrics = await (await fetch(`${world.server.url}/metrics`)).text();
  t.ok(metricValue(metrics, 'updater_transfer_bytes_total', { kind: 'delta', transport: 'coap' }) > 0, 'the delta travelled over CoAP');
  t.equal(metricValue(metrics, 'updater_transfer_bytes_total', { kind: 'delta', transport: 'http' }), 0, 'and not over HTTP');
  t.equal(metricValue(metrics, 'updater_update_reports_total', { result: 'success' }), 1, 'the success report arrived');
});
