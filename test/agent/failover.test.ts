import t from 'tap';
import pino from 'pino';
import { Transports } from '../../agent/failover.js';
import { HttpTransport } from '../../agent/http-transport.js';
import type { HeartbeatWire } from '../../src/shared/wire/keys.js';
import { startUpdateWorld } from '../helpers/agent.js';
import { freePort } from '../helpers/fixture.js';
import { startProxy } from '../helpers/proxy.js';

// Spec 3.5 failover, written once above the transports: the policy is exercised here with
// two real HTTP endpoints (a closed port as the primary, the real server behind a proxy as
// the fallback), the same code path a CoAP fallback takes.

const world = await startUpdateWorld(t, 100_000);
const silent = pino({ level: 'silent' });
const body: HeartbeatWire = {
  device_id: 'dev-failover', version_hash: world.v2Hash, hw_info: { arch: 'x64', os: 'linux', free_ram: 1, free_disk: 1 },
  timestamp: 1, version: '2.0.0', artifact: 'app',
};

t.test('a transport error gets one attempt on the other transport, and the next call starts at the primary again', async (t) => {
  const closed = new HttpTransport(`http://127.0.0.1:${await freePort()}`);
  const proxy = await startProxy(world.server.url);
  t.teardown(() => proxy.close());
  let primaryCalls = 0;
  const countingPrimary = Object.assign(Object.create(closed) as HttpTransport, {
    heartbeat: (b: HeartbeatWire, ms: number) => {
      primaryCalls++;
      return closed.heartbeat(b, ms);
    },
  });
  const transports = new Transports(countingPrimary, new HttpTransport(proxy.url), silent);
  const first = await transports.run('heartbeat', (tr) => tr.heartbeat(body, 5000));
  t.match(first, { update_available: false }, 'the fallback answered');
  const second = await transports.run('heartbeat', (tr) => tr.heartbeat(body, 5000));
  t.match(second, { update_available: false });
  t.equal(primaryCalls, 2, 'each call tried the primary first: the fallback is not sticky');
  t.equal(proxy.requests.filter((r) => r.url === '/heartbeat').length, 2, 'one fallback attempt per call');
});

t.test('a refusal by the server is not a transport error and gets no fallback attempt', async (t) => {
  const proxy = await startProxy(world.server.url);
  t.teardown(() => proxy.close());
  const transports = new Transports(new HttpTransport(world.server.url), new HttpTransport(proxy.url), silent);
  await t.rejects(transports.run('heartbeat', (tr) => tr.heartbeat({ ...body, artifact: 'nosuchtrack' }, 5000)), { code: 'AGENT_REQUEST_REFUSED' });
  t.equal(proxy.requests.length, 0, 'the fallback was not asked');
});

t.test('when both transports fail, the error of the fallback attempt is reported', async (t) => {
  const transports = new Transports(new HttpTransport(`http://127.0.0.1:${await freePort()}`), new HttpTransport(`http://127.0.0.1:${await freePort()}`), silent);
  await t.rejects(transports.run('heartbeat', (tr) => tr.heartbeat(body, 5000)), { code: 'AGENT_TRANSPORT_FAILED' });
});
