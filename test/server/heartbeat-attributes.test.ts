import t from 'tap';
import { encodeHeartbeat } from '../../src/shared/wire/cbor.js';
import { startCoapTestServer } from '../helpers/coap.js';
import { firmware, makeFixture, randomHash } from '../helpers/fixture.js';

// `attributes` in a heartbeat over HTTP (a JSON object) and CoAP (CBOR key 7): a good set does
// not change the answer by a byte; a bad one is 400 / 4.00 naming the field, and the server
// keeps answering.

t.test('attributes on the wire: accepted without changing the answer, bad ones refused naming the field', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(8_000, 'attributes'));
  const s = await startCoapTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }]);
  t.teardown(() => s.stop());
  const base = { device_id: 'd1', version_hash: randomHash(), hw_info: { arch: 'arm64', os: 'linux', free_ram: 1, free_disk: 1 }, timestamp: 1_800_000_000, version: '1' };
  const both = async (body: Record<string, unknown>) => {
    const http = await fetch(`${s.server.url}/heartbeat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const httpBody = Buffer.from(await http.arrayBuffer());
    const coap = await s.client.request({ method: 'POST', path: '/heartbeat', payload: encodeHeartbeat(body), contentFormat: 60 });
    return { http: http.status, httpBody, coap: coap.code, coapBody: coap.payload };
  };
  const plain = await both(base);
  t.match(plain, { http: 200, coap: '2.05' });
  // The body cap (4096 bytes) still holds, so the largest set is 32 short entries and one long one.
  const full = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, i === 0 ? 'é'.repeat(128) : `value-${i}`]));
  for (const attributes of [{ hw: 'B', tz: 'Europe/Berlin' }, {}, full]) {
    const answer = await both({ ...base, attributes });
    t.match(answer, { http: 200, coap: '2.05' }, `${Object.keys(attributes).length} attributes are accepted`);
    t.ok(answer.httpBody.equals(plain.httpBody) && answer.coapBody.equals(plain.coapBody), 'and the answer is the same, byte for byte');
  }
  const bad: [unknown, string][] = [
    [{ ...full, k32: 'x' }, 'attributes'],
    [{ hw: 'x'.repeat(129) }, 'attributes.hw'],
    [{ hw: 'é'.repeat(129) }, 'attributes.hw'],
    [{ 'hw rev': 'B' }, 'attributes'],
    [{ ['x'.repeat(65)]: 'B' }, 'attributes'],
    [{ hw: 2 }, 'attributes.hw'],
    [{ hw: { nested: 'B' } }, 'attributes.hw'],
    [['hw', 'B'], 'attributes'],
    ['hw=B', 'attributes'],
  ];
  for (const [attributes, field] of bad) {
    const answer = await both({ ...base, attributes });
    t.match(answer, { http: 400, coap: '4.00' }, `${JSON.stringify(attributes).slice(0, 60)} is refused over both`);
    const error = JSON.parse(answer.httpBody.toString()).error;
    t.equal(error.code, 'INVALID_FIELD');
    t.ok(error.message.startsWith(`${field} `) && answer.coapBody.toString().includes(field), `naming ${field}`);
  }
  t.match(await both(base), { http: 200, coap: '2.05' }, 'still answering');
});
