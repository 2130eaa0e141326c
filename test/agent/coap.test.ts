import t from 'tap';
import { expectExit, logged, makeDevice, startUpdateWorld } from '../helpers/agent.js';
import { startCoapBridge } from '../helpers/coap-bridge.js';
import { startProxy } from '../helpers/proxy.js';

// The agent's CoAP transport over real UDP on 127.0.0.1, through a CoAP front that
// translates to the real server (test/helpers/coap-bridge.ts).

const world = await startUpdateWorld(t, 300_000);

t.test('v1 to v2 by delta over CoAP, confirmed and reported over CoAP', async (t) => {
  const bridge = await startCoapBridge(world.server.url);
  t.teardown(() => bridge.close());
  const device = await makeDevice(world.fixture, 'unused', world.v1Bytes, { http_url: undefined, coap_url: bridge.url, primary: 'coap' });
  const run = await device.runOnce();
  expectExit(t, run);
  t.same(await device.current(), { slot: 'slot-b', hash: world.v2Hash });
  t.ok(bridge.requests.some((r) => r.method === 'GET' && r.url.startsWith('/delta/')), 'the delta travelled over CoAP');
  const boot = await device.runOnce();
  expectExit(t, boot);
  t.ok(logged(boot, 'update confirmed'));
  t.match(bridge.reports.at(-1), { success: true, new_hash: world.v2Hash, previous_hash: world.v1Hash });
});

t.test('a full download over CoAP resumes at the block of its durable offset after a kill', async (t) => {
  const bridge = await startCoapBridge(world.server.url);
  t.teardown(() => bridge.close());
  const device = await makeDevice(world.fixture, 'unused', world.strangerBytes, { http_url: undefined, coap_url: bridge.url, primary: 'coap', checkpoint_kb: 16 });
  const killed = await device.runOnce('mid-download');
  t.equal(killed.signal, 'SIGKILL');
  const before = bridge.requests.length;
  const run = await device.runOnce();
  expectExit(t, run);
  const firstBlock = bridge.requests.slice(before).find((r) => r.method === 'GET');
  t.ok((firstBlock?.block2 ?? 0) >= 16, `the restarted download asked first for block ${firstBlock?.block2}, not block 0`);
  t.same(await device.current(), { slot: 'slot-b', hash: world.v2Hash });
});

t.test('HTTP port closed: CoAP answers, and the next cycle starts on HTTP again', async (t) => {
  const bridge = await startCoapBridge(world.server.url);
  t.teardown(() => bridge.close());
  const proxy = await startProxy(world.server.url);
  const httpUrl = proxy.url;
  await proxy.close(); // the HTTP port is now closed
  const device = await makeDevice(world.fixture, httpUrl, world.v1Bytes, { coap_url: bridge.url, primary: 'http' });
  const run = await device.runOnce();
  expectExit(t, run);
  t.ok(run.lines.some((l) => l.msg === 'transport error; one attempt on the fallback transport' && l.what === 'heartbeat'), 'the heartbeat fell back to CoAP');
  t.same(await device.current(), { slot: 'slot-b', hash: world.v2Hash }, 'the update arrived over CoAP');

  // HTTP is back on the same port: the next cycle uses it, not the fallback of the last one.
  const reopened = await startProxy(world.server.url, Number(new URL(httpUrl).port));
  t.teardown(() => reopened.close());
  const coapBefore = bridge.requests.length;
  const next = await device.runOnce();
  expectExit(t, next);
  t.notOk(logged(next, 'transport error; one attempt on the fallback transport'));
  t.ok(reopened.requests.some((r) => r.url === '/heartbeat'), 'the next cycle heartbeats over HTTP');
  t.equal(bridge.requests.length, coapBefore, 'and sends nothing over CoAP');
});
