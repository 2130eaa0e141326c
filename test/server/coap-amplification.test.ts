import t from 'tap';
import { AMPLIFICATION_FACTOR, ECHO_OPTION } from '../../src/actors/coap/datagrams/amplification.js';
import { encodeHeartbeat } from '../../src/shared/wire/cbor.js';
import { blockOption, CoapClient, parseBlock2, requestDatagram, startCoapTestServer, type CoapRequest, type CoapResponse } from '../helpers/coap.js';
import { firmware, makeFixture, randomHash } from '../helpers/fixture.js';
import { heartbeatUntilSigned } from '../helpers/http.js';

// Amplification over CoAP (docs/coap.md, "Amplification"), measured on crafted datagrams: an
// answer to a source that has not echoed an Echo value (RFC 9175) is at most 3x the request
// datagram; echoing the value it was given earns the answer it asked for.

const echoOf = (response: CoapResponse) => response.packet.options.find((o) => String(o.name) === String(ECHO_OPTION))?.value;

t.test('answers to unproven sources stay within 3x; an echoed value lifts the limit', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const app = await fixture.writeBinary('app.bin', firmware(40_000, 'amplification'));
  const s = await startCoapTestServer(fixture, [{ name: 'a', version: '1', binary: app.path }], { allow_full_download: true, default_artifact: 'a' });
  t.teardown(() => s.stop());
  // A device on an unknown version is offered the whole file: wait until it is ready.
  const stranger = randomHash();
  await heartbeatUntilSigned(s.server.url, stranger, 'a');

  /** Sends `request` (with `echo` when given) and returns the answer and its size over the request's. */
  const measure = async (client: CoapClient, request: CoapRequest, echo?: Buffer) => {
    const token = Buffer.from([1, 2, 3, 4]);
    const withEcho = { ...request, token, extraOptions: [...(request.extraOptions ?? []), ...(echo ? [{ name: String(ECHO_OPTION), value: echo }] : [])] };
    const datagram = requestDatagram(withEcho);
    const response = await client.exchange(datagram, token);
    return { response, ratio: response.raw.length / datagram.length, requestBytes: datagram.length };
  };

  await t.test('a GET asking 1024-byte blocks gets a smaller block at the same offset, and the full size once it echoes', async (t) => {
    const client = new CoapClient(s.coapPort);
    t.teardown(() => client.close());
    const path = `/binary/${app.hash}`;
    const first = await measure(client, { method: 'GET', path, block2: blockOption(3, 1024) });
    t.equal(first.response.code, '2.05');
    t.ok(first.ratio <= AMPLIFICATION_FACTOR, `answer/request ${first.ratio.toFixed(2)} (${first.response.raw.length} / ${first.requestBytes} bytes)`);
    const block = parseBlock2(first.response.option('Block2'))!;
    t.ok(block.size < 1024, `a ${block.size}-byte block`);
    t.equal(block.num * block.size, 3 * 1024, 'starting where block 3 of 1024 starts');
    const echo = echoOf(first.response);
    t.ok(echo && echo.length > 0, 'with an Echo value');

    const proven = await measure(client, { method: 'GET', path, block2: blockOption(4, 1024) }, echo);
    t.equal(proven.response.payload.length, 1024, 'echoed: the block size asked for');
    t.same(parseBlock2(proven.response.option('Block2')), { num: 4, more: true, size: 1024 });
    t.notOk(echoOf(proven.response), 'and no new Echo value');

    const forged = Buffer.from(echo!);
    forged.writeUInt8(forged.readUInt8(forged.length - 1) ^ 1, forged.length - 1);
    const refused = await measure(client, { method: 'GET', path, block2: blockOption(4, 1024) }, forged);
    t.ok(refused.ratio <= AMPLIFICATION_FACTOR, `a forged Echo value proves nothing (${refused.ratio.toFixed(2)})`);
  });

  await t.test('a short heartbeat whose manifest is over 3x gets 4.01 with an Echo value, then the manifest', async (t) => {
    const client = new CoapClient(s.coapPort);
    t.teardown(() => client.close());
    // The 89-byte heartbeat of the campaign: short id, the fields the protocol requires, no artifact.
    const payload = encodeHeartbeat({
      device_id: 'd', version_hash: stranger, hw_info: { arch: 'arm', os: 'linux', free_ram: 1, free_disk: 1 }, timestamp: 1_700_000_000, version: '1',
    });
    const request: CoapRequest = { method: 'POST', path: '/heartbeat', payload, contentFormat: 60 };
    const first = await measure(client, request);
    t.equal(first.response.code, '4.01');
    t.ok(first.ratio <= AMPLIFICATION_FACTOR, `answer/request ${first.ratio.toFixed(2)} (${first.response.raw.length} / ${first.requestBytes} bytes)`);
    const echo = echoOf(first.response);
    t.ok(echo, 'with an Echo value');
    const second = await measure(client, request, echo);
    t.equal(second.response.code, '2.05', 'echoed: the manifest');
    const over = second.response.raw.length / first.requestBytes;
    t.ok(over > AMPLIFICATION_FACTOR, `${second.response.raw.length} bytes, ${over.toFixed(2)}x the heartbeat without Echo: the reason for the round trip`);
  });

  await t.test('client mistakes are 4.xx and no answer to an unproven source passes 3x', async (t) => {
    const client = new CoapClient(s.coapPort);
    t.teardown(() => client.close());
    const cases: [string, CoapRequest, string][] = [
      ['Block2 SZX 7', { method: 'GET', path: `/binary/${app.hash}`, block2: Buffer.from([0x07]) }, '4.00'],
      ['a block past the end', { method: 'GET', path: `/binary/${app.hash}`, block2: blockOption(5000, 1024) }, '4.02'],
      ['an unknown transfer', { method: 'GET', path: `/binary/${randomHash()}`, block2: blockOption(0, 1024) }, '4.04'],
      ['a bad hash', { method: 'GET', path: '/binary/xyz', block2: blockOption(0, 1024) }, '4.00'],
      ['an unknown path', { method: 'GET', path: '/nope' }, '4.04'],
      ['a wrong method', { method: 'PUT', path: '/heartbeat' }, '4.05'],
      ['a heartbeat that is not CBOR', { method: 'POST', path: '/heartbeat', payload: Buffer.from([0xff, 0xff]), contentFormat: 60 }, '4.00'],
      ['an empty heartbeat', { method: 'POST', path: '/heartbeat', contentFormat: 60 }, '4.00'],
      ['a heartbeat as JSON', { method: 'POST', path: '/heartbeat', payload: Buffer.from('{}'), contentFormat: 50 }, '4.15'],
      ['a GET without Block2', { method: 'GET', path: `/binary/${app.hash}` }, '2.05'],
      ['a GET of 16-byte blocks', { method: 'GET', path: `/binary/${app.hash}`, block2: blockOption(1, 16) }, '2.05'],
    ];
    for (const [what, request, code] of cases) {
      const { response, ratio } = await measure(client, request);
      t.equal(response.code, code, what);
      t.ok(ratio <= AMPLIFICATION_FACTOR, `${what}: ${ratio.toFixed(2)}`);
    }
  });
});
