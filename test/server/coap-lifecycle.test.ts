import { createSocket } from 'node:dgram';
import t from 'tap';
import { heartbeatCbor, startCoapTestServer } from '../helpers/coap.js';
import { firmware, makeFixture } from '../helpers/fixture.js';
import { startTestServer } from '../helpers/server.js';

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createSocket({ type: 'udp4', reuseAddr: false });
    socket.once('error', () => resolve(false));
    socket.bind(port, '127.0.0.1', () => socket.close(() => resolve(true)));
  });
}

t.test('without listen.coap no CoAP front-end runs', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(10_000, 'no-coap'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }]);
  t.teardown(() => server.stop());
  t.equal(server.supervisor.actor('coap'), undefined);
  t.ok(server.supervisor.actor('http'));
});

t.test('a crashed CoAP front-end comes back on its port; a stop releases the port', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(10_000, 'restart'));
  const s = await startCoapTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }]);
  let stopped = false;
  t.teardown(() => (stopped ? undefined : s.stop()));
  t.equal((await s.client.heartbeat(v2.hash)).code, '2.05');
  t.notOk(await canBind(s.coapPort), 'the port is taken while the server runs');

  const host = s.server.supervisor.actor('coap')!;
  const first = host.worker;
  await first!.terminate();
  // The client retransmits every second, like a device, until the restarted actor answers.
  const again = await s.client.request({ method: 'POST', path: '/heartbeat', payload: heartbeatCbor(v2.hash), contentFormat: 60 }, 15_000);
  t.equal(again.code, '2.05', 'answered by the restarted front-end');
  t.not(host.worker, first, 'a new worker');

  await s.stop();
  stopped = true;
  t.ok(await canBind(s.coapPort), 'the UDP socket is closed once the server has stopped');
});
