import t from 'tap';
import { OBSERVE_POST, coapPing, garbageDatagram, hostileCborBodies } from '../../src/load/hostile.js';
import { encodeHeartbeat } from '../../src/shared/wire/cbor.js';
import { MAX_DEVICE_BODY_BYTES } from '../../src/shared/wire/validate.js';
import { blockOption, CoapClient, heartbeatCbor, requestDatagram, startCoapTestServer } from '../helpers/coap.js';
import { firmware, makeFixture, nextVersion } from '../helpers/fixture.js';
import { getBytes, metricValue } from '../helpers/http.js';

t.test('hostile input over CoAP', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(20_000, 'hostile'));
  const s = await startCoapTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }]);
  t.teardown(() => s.stop());
  const post = (payload: Buffer, contentFormat = 60) => s.client.request({ method: 'POST', path: '/heartbeat', payload, contentFormat });
  const metrics = async () => (await getBytes(`${s.server.url}/metrics`)).body.toString();

  await t.test('a burst of garbage datagrams is dropped unanswered while good heartbeats are answered', async (t) => {
    const attacker = new CoapClient(s.coapPort);
    t.teardown(() => attacker.close());
    const answers: Promise<string>[] = [];
    for (let i = 0; i < 3000; i++) {
      await attacker.sendRaw(garbageDatagram(i));
      if (i % 300 === 0) answers.push(s.client.heartbeat(v2.hash).then((r) => r.code));
    }
    t.same(await Promise.all(answers), Array(10).fill('2.05'), 'every good heartbeat answered 2.05');
    t.equal((await s.client.heartbeat(v2.hash)).code, '2.05', 'and the server answers after the burst');
    t.equal(attacker.received.length, 0, 'not one datagram went back to the garbage source');
    // UDP may drop some of the burst in the socket buffer; most of it must have been seen and refused.
    const text = await metrics();
    const dropped = metricValue(text, 'updater_coap_datagrams_dropped_total', { reason: 'unparseable' }) + metricValue(text, 'updater_coap_datagrams_dropped_total', { reason: 'long-token' });
    t.ok(dropped >= 1000, `${dropped} garbage datagrams dropped`);
  });

  await t.test('truncated CBOR, a huge declared array, deep nesting and a non-map are 4.00', async (t) => {
    const whole = heartbeatCbor(v2.hash);
    const bodies = hostileCborBodies(whole, encodeHeartbeat({ device_id: { a: { b: { c: { d: 1 } } } } }));
    for (const [name, body] of bodies) {
      const response = await post(body);
      t.equal(response.code, '4.00', name);
      t.match(response.payload.toString(), /^(MALFORMED_BODY|INVALID_FIELD)/, name);
    }
    t.equal((await s.client.heartbeat(v2.hash)).code, '2.05', 'the server still answers');
    // Each answer is in the latency histogram under its route and code class.
    const text = await metrics();
    t.equal(metricValue(text, 'updater_coap_request_seconds_count', { route: 'heartbeat', code: '4.xx' }), bodies.length, 'every 4.00 counted under heartbeat, 4.xx');
    t.ok(metricValue(text, 'updater_coap_request_seconds_count', { route: 'heartbeat', code: '2.xx' }) >= 12, 'the answered heartbeats under heartbeat, 2.xx');
  });

  await t.test('an oversized or block-wise request body is 4.13 with Size1, never decoded', async (t) => {
    const big = await post(Buffer.alloc(MAX_DEVICE_BODY_BYTES + 1, 0xa0));
    t.equal(big.code, '4.13');
    t.equal(big.payload.toString().split(':')[0], 'BODY_TOO_LARGE');
    t.equal(big.option('Size1')?.readUIntBE(0, big.option('Size1')!.length), MAX_DEVICE_BODY_BYTES);
    // Block1 (RFC 7959 §2.5): the first block of a larger body.
    const token = Buffer.from('b1b1', 'hex');
    // NUM 0, M 1, SZX 2 (64 bytes): more blocks would follow.
    const datagram = requestDatagram({ method: 'POST', path: '/heartbeat', payload: Buffer.alloc(64, 0xa0), contentFormat: 60, block1: Buffer.from([0x0a]), token });
    const blockwise = await s.client.exchange(datagram, token);
    t.equal(blockwise.option('Size1')?.readUIntBE(0, 2), MAX_DEVICE_BODY_BYTES);
    t.equal(blockwise.code, '4.13', 'Block1 request bodies are refused');
  });

  await t.test('a body that is not CBOR by its Content-Format is 4.15', async (t) => {
    const response = await post(Buffer.from(JSON.stringify({ device_id: 'x' })), 50);
    t.equal(response.code, '4.15');
  });

  await t.test('conformance: a ping gets a Reset, unknown critical options 4.02, Proxy-Uri 5.05', async (t) => {
    const prober = new CoapClient(s.coapPort);
    t.teardown(() => prober.close());
    await prober.sendRaw(coapPing(0xbeef));
    const started = Date.now();
    while (prober.received.length === 0 && Date.now() - started < 10_000) await new Promise((r) => setTimeout(r, 20));
    t.same(prober.received.map((r) => [...r.raw]), [[0x70, 0x00, 0xbe, 0xef]], 'a 4-byte Reset with the same message ID');
    const critical = Buffer.from('c0c0', 'hex');
    const withCritical = requestDatagram({ method: 'POST', path: '/heartbeat', payload: heartbeatCbor(v2.hash), contentFormat: 60, token: critical, extraOptions: [{ name: '65001', value: Buffer.from([1]) }] });
    const refused = await s.client.exchange(withCritical, critical);
    t.equal(refused.code, '4.02');
    t.match(refused.payload.toString(), /^UNSUPPORTED_CRITICAL_OPTION/);
    const proxied = Buffer.from('c1c1', 'hex');
    const viaProxy = await s.client.exchange(requestDatagram({ method: 'GET', path: `/binary/${v2.hash}`, token: proxied, extraOptions: [{ name: 'Proxy-Uri', value: Buffer.from('coap://elsewhere/x') }] }), proxied);
    t.equal(viaProxy.code, '5.05');
    // A 5-byte POST with an empty Observe option and no path: a client mistake, answered 4.xx
    // in fewer than 3 times its bytes (node-coap alone answered a 54-byte 5.00).
    const before = prober.received.length;
    await prober.sendRaw(OBSERVE_POST);
    const since = Date.now();
    while (prober.received.length === before && Date.now() - since < 10_000) await new Promise((r) => setTimeout(r, 20));
    const answer = prober.received[before];
    t.match(answer?.code, /^4\./, 'a client mistake is 4.xx');
    t.ok(answer && answer.raw.length <= 3 * 5, `answered in ${answer?.raw.length} bytes`);
  });

  await t.test('critical options 2049 and 2053 are 4.02, decided by number (RFC 7252 §5.4.1)', async (t) => {
    for (const number of ['2049', '2053']) {
      const token = Buffer.from(`c2${number}`, 'hex');
      const get = requestDatagram({ method: 'GET', path: `/binary/${v2.hash}`, block2: blockOption(0, 64), token, extraOptions: [{ name: number, value: Buffer.from([1]) }] });
      const refused = await s.client.exchange(get, token);
      t.equal(refused.code, '4.02', `a GET with Block2 and option ${number}`);
      t.match(refused.payload.toString(), /^UNSUPPORTED_CRITICAL_OPTION/);
      const post = requestDatagram({ method: 'POST', path: '/heartbeat', payload: heartbeatCbor(v2.hash), contentFormat: 60, token, extraOptions: [{ name: number, value: Buffer.from([1]) }] });
      t.equal((await s.client.exchange(post, token)).code, '4.02', `a heartbeat with option ${number}`);
    }
  });

  await t.test('a payload marker with no payload and a truncated option are malformed: a Reset or nothing, never 4.04', async (t) => {
    const prober = new CoapClient(s.coapPort);
    t.teardown(() => prober.close());
    const before = metricValue(await metrics(), 'updater_coap_datagrams_dropped_total', { reason: 'malformed' });
    const get = (messageId: number, confirmable = true) => requestDatagram({ method: 'GET', path: `/binary/${v2.hash}`, messageId, confirmable, token: Buffer.from([7, messageId & 0xff]) });
    const malformed: [string, Buffer, boolean][] = [
      ['a payload marker with no payload', Buffer.concat([get(0x5101), Buffer.from([0xff])]), true],
      // Another Uri-Path (delta 0) declaring 5 bytes of value, with 2 left.
      ['a truncated option', Buffer.concat([get(0x5102), Buffer.from([0x05, 0x61, 0x62])]), true],
      ['a non-confirmable payload marker with no payload', Buffer.concat([get(0x5103, false), Buffer.from([0xff])]), false],
    ];
    for (const [, datagram] of malformed) await prober.sendRaw(datagram);
    // Then a good request on the same socket: once it is answered, the malformed ones were handled.
    const token = Buffer.from('e0e0', 'hex');
    await prober.exchange(requestDatagram({ method: 'GET', path: `/binary/${v2.hash}`, block2: blockOption(0, 64), token }), token);
    const resets = prober.received.filter((r) => r.packet.reset).map((r) => r.packet.messageId);
    t.same(resets.sort(), [0x5101, 0x5102], 'each confirmable one got a bare Reset with its message id');
    t.ok(prober.received.filter((r) => r.packet.reset).every((r) => r.raw.length === 4), 'of 4 bytes');
    const answered = prober.received.filter((r) => r.code !== '0.00' && !r.packet.token.equals(token));
    t.same(answered.map((r) => r.code), [], 'and no response at all to them (no 4.04)');
    const after = metricValue(await metrics(), 'updater_coap_datagrams_dropped_total', { reason: 'malformed' });
    t.equal(after - before, 3, 'counted as malformed');
  });

  await t.test('a retransmitted confirmable request is answered from the duplicate cache, not processed twice', async (t) => {
    const before = metricValue(await metrics(), 'updater_manifest_decisions_total', { row: '2' });
    const token = Buffer.from('d0d0d0d0', 'hex');
    const datagram = requestDatagram({ method: 'POST', path: '/heartbeat', payload: heartbeatCbor(v2.hash), contentFormat: 60, messageId: 4242, token });
    const first = await s.client.exchange(datagram, token);
    const again = await s.client.exchange(datagram, token);
    t.equal(first.code, '2.05');
    t.ok(first.packet.ack, 'piggybacked on the ACK');
    t.ok(again.raw.equals(first.raw), 'the retransmission gets the very same datagram back');
    const after = metricValue(await metrics(), 'updater_manifest_decisions_total', { row: '2' });
    t.equal(after - before, 1, 'the manifester decided once');
    t.ok(metricValue(await metrics(), 'updater_coap_dedup_cache_bytes') > 0, 'the cache holds the response');
  });
});

t.test('beyond coap.max_in_flight requests are answered 5.03 with Max-Age, and service goes on', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(20_000, 'busy-1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(firmware(20_000, 'busy-1'), 'busy-2'));
  const s = await startCoapTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }, { name: 'old', version: '1', binary: v1.path }], { coap: { max_in_flight: 1 }, default_artifact: 'app' });
  t.teardown(() => s.stop());
  // Sent back to back, the burst sits in the socket buffer and is read in one go, before the
  // first answer can come back from the manifester thread: heartbeats one version behind, whose
  // delta does not exist yet, are the manifester's to answer (an up-to-date one the front-end
  // answers at once, and it never waits in flight).
  const burst = await Promise.all(Array.from({ length: 40 }, () => s.client.heartbeat(v1.hash)));
  const codes = burst.map((r) => r.code);
  t.ok(codes.every((c) => c === '2.05' || c === '5.03'), `only 2.05 and 5.03: ${[...new Set(codes)].join(' ')}`);
  const overloaded = burst.filter((r) => r.code === '5.03');
  t.ok(overloaded.length > 0, `${overloaded.length} of 40 answered 5.03`);
  t.ok(overloaded.every((r) => r.option('Max-Age') !== undefined && r.option('Max-Age')!.readUIntBE(0, r.option('Max-Age')!.length) > 0), 'each 5.03 carries Max-Age');
  t.ok(overloaded.every((r) => r.payload.toString().startsWith('OVERLOADED')));
  t.equal((await s.client.heartbeat(v2.hash)).code, '2.05', 'answered once the burst is over');
});
