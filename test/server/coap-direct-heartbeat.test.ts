import t from 'tap';
import { CoapClient, heartbeatCbor, requestDatagram, startCoapTestServer, type CoapRequest } from '../helpers/coap.js';
import { adminCall } from '../helpers/admin.js';
import { authCoap, heartbeatCoap, TestDevice } from '../helpers/device-auth.js';
import { firmware, makeFixture, nextVersion } from '../helpers/fixture.js';
import { getBytes, metricValue } from '../helpers/http.js';

// The direct answer of a plain confirmable heartbeat (src/actors/coap/device/direct-heartbeat.ts):
// the front-end answers it from the datagram, without node-coap's exchange. What a device sees
// must not change: the same datagram node-coap would have sent, the same answer to a
// retransmission, and a request the direct path leaves to node-coap decided once, not twice.

t.test('plain confirmable heartbeats are answered directly, as node-coap would', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(20_000, 'direct-1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(firmware(20_000, 'direct-1'), 'direct-2'));
  const s = await startCoapTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }, { name: 'old', version: '1', binary: v1.path }], { default_artifact: 'app' });
  t.teardown(() => s.stop());
  const metrics = async () => (await getBytes(`${s.server.url}/metrics`)).body.toString();
  const answeredBy = async () => {
    const text = await metrics();
    return {
      direct: metricValue(text, 'updater_coap_heartbeats_answered_total', { path: 'direct' }),
      nodeCoap: metricValue(text, 'updater_coap_heartbeats_answered_total', { path: 'node-coap' }),
      snapshot: metricValue(text, 'updater_heartbeats_answered_total', { by: 'snapshot' }),
      manifester: metricValue(text, 'updater_heartbeats_answered_total', { by: 'manifester' }),
      refusedByRoute: metricValue(text, 'updater_coap_request_seconds_count', { route: 'heartbeat', code: '4.xx' }),
    };
  };
  const moved = (before: Record<string, number>, after: Record<string, number>) =>
    Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - before[k]!]));
  const exchange = (client: CoapClient, request: CoapRequest) => client.exchange(requestDatagram(request), request.token!);

  await t.test('the direct answer is the datagram node-coap sends for the same request', async (t) => {
    const direct = new CoapClient(s.coapPort);
    const throughNodeCoap = new CoapClient(s.coapPort);
    t.teardown(() => {
      direct.close();
      throughNodeCoap.close();
    });
    const same = { method: 'POST', path: '/heartbeat', payload: heartbeatCbor(v2.hash), messageId: 0x2001, token: Buffer.from('a1a2a3a4', 'hex') } as const;
    const before = await answeredBy();
    const first = await exchange(direct, { ...same, contentFormat: 60 });
    // Content-Format 60 in two bytes is the same format, but not a plain heartbeat: node-coap answers it.
    const second = await exchange(throughNodeCoap, { ...same, extraOptions: [{ name: 'Content-Format', value: Buffer.from([0, 60]) }] });
    t.same(moved(before, await answeredBy()), { direct: 1, nodeCoap: 1, snapshot: 2, manifester: 0, refusedByRoute: 0 });
    t.equal(first.code, '2.05');
    t.ok(first.packet.ack, 'piggybacked on the ACK');
    t.equal(first.packet.messageId, 0x2001);
    t.ok(first.raw.equals(second.raw), `the same bytes (${first.raw.toString('hex')} / ${second.raw.toString('hex')})`);
  });

  await t.test('a retransmission gets the same datagram from the duplicate cache and counts once', async (t) => {
    const client = new CoapClient(s.coapPort);
    t.teardown(() => client.close());
    const token = Buffer.from('b1b2b3b4', 'hex');
    const datagram = requestDatagram({ method: 'POST', path: '/heartbeat', payload: heartbeatCbor(v2.hash), contentFormat: 60, messageId: 0x2002, token });
    const before = await answeredBy();
    const first = await client.exchange(datagram, token);
    const again = await client.exchange(datagram, token);
    t.ok(again.raw.equals(first.raw), 'the very same datagram');
    t.same(moved(before, await answeredBy()), { direct: 1, nodeCoap: 0, snapshot: 1, manifester: 0, refusedByRoute: 0 });
  });

  await t.test('a heartbeat the manifester must answer is asked once, and answered through node-coap', async (t) => {
    const client = new CoapClient(s.coapPort);
    t.teardown(() => client.close());
    const before = await answeredBy();
    // One version behind on a track whose delta has not been asked for: not in the snapshot yet.
    const answer = await exchange(client, { method: 'POST', path: '/heartbeat', payload: heartbeatCbor(v1.hash, 'app'), contentFormat: 60, token: Buffer.from('c1c2c3c4', 'hex') });
    t.equal(answer.code, '2.05');
    t.same(moved(before, await answeredBy()), { direct: 0, nodeCoap: 1, snapshot: 0, manifester: 1, refusedByRoute: 0 });
  });

  await t.test('a refused heartbeat is refused once, by the route', async (t) => {
    const client = new CoapClient(s.coapPort);
    t.teardown(() => client.close());
    const before = await answeredBy();
    const answer = await exchange(client, { method: 'POST', path: '/heartbeat', payload: Buffer.from([0xa1, 0x01, 0x02]), contentFormat: 60, token: Buffer.from('d1d2d3d4', 'hex') });
    t.equal(answer.code, '4.00');
    t.match(answer.payload.toString(), /^(INVALID_FIELD|MISSING_FIELD|INVALID_BODY)/);
    t.same(moved(before, await answeredBy()), { direct: 0, nodeCoap: 0, snapshot: 0, manifester: 0, refusedByRoute: 1 });
  });
});

t.test('with device tokens on, a refused token is counted once', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(20_000, 'direct-auth'));
  const { server, client, stop } = await startCoapTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: v1.path }], { devices: { auth: 'on', enrollment: 'manual' } });
  t.teardown(stop);
  const refused = async (reason: string) => metricValue((await getBytes(`${server.url}/metrics`)).body.toString(), 'updater_device_tokens_refused_total', { reason });
  const alice = new TestDevice('alice');
  await authCoap(client, alice.request());
  await adminCall(server.url, 'POST', '/admin/devices/alice/accept');
  const granted = await authCoap(client, alice.request());
  const token = granted.answer?.token as string;
  t.equal((await heartbeatCoap(client, token, 'alice', v1.hash)).code, '2.05', 'alice with her token');

  const invalidBefore = await refused('invalid');
  const forged = await heartbeatCoap(client, 'd1.' + Buffer.alloc(40, 9).toString('base64url'), 'alice', v1.hash);
  t.equal(forged.code, '4.01');
  t.equal(await refused('invalid') - invalidBefore, 1, 'one refusal for one request');

  const mismatchBefore = await refused('mismatch');
  const impostor = await heartbeatCoap(client, token, 'bob', v1.hash);
  t.equal(impostor.code, '4.03');
  t.equal(await refused('mismatch') - mismatchBefore, 1, 'one refusal for one request');
});
