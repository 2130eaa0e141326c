import { generate } from 'coap-packet';
import t from 'tap';
import { inspectDatagram, MAX_REQUEST_BODY_BYTES } from '../../../../src/actors/coap/datagrams/guard.js';

const request = (payload: Buffer, options: { name: string; value: Buffer }[] = []) =>
  generate({ code: 'POST', messageId: 7, token: Buffer.from([1, 2]), options: [{ name: 'Uri-Path', value: Buffer.from('heartbeat') }, ...options] as never, payload }, 65_000);

t.test('well-formed requests pass with their body', async (t) => {
  const verdict = inspectDatagram(request(Buffer.from([0xa0])));
  t.equal(verdict.kind, 'pass');
});

t.test('datagrams that are not CoAP are dropped', async (t) => {
  t.same(inspectDatagram(Buffer.from([0x40])), { kind: 'drop', reason: 'unparseable' }, 'shorter than a header');
  t.same(inspectDatagram(Buffer.from([0x00, 0x01, 0x00, 0x01])), { kind: 'drop', reason: 'unparseable' }, 'version 0');
  t.same(inspectDatagram(Buffer.from([0x49, 0x01, 0x00, 0x01, 1, 2])), { kind: 'drop', reason: 'long-token' }, 'token length 9');
});

t.test('an oversized or block-wise body is marked too large and emptied before anyone reads it', async (t) => {
  const big = inspectDatagram(request(Buffer.alloc(MAX_REQUEST_BODY_BYTES + 1)));
  t.equal(big.kind, 'too-large');
  t.equal(big.kind === 'too-large' && big.packet.payload.length, 0);
  const blockwise = inspectDatagram(request(Buffer.alloc(16), [{ name: 'Block1', value: Buffer.from([0x08]) }]));
  t.equal(blockwise.kind, 'too-large');
  t.notOk(blockwise.kind === 'too-large' && blockwise.packet.options.some((o) => o.name === 'Block1'), 'node-coap never sees Block1');
});

t.test('an empty confirmable message is a ping, answered with a Reset', async (t) => {
  t.same(inspectDatagram(Buffer.from([0x40, 0x00, 0x12, 0x34])), { kind: 'ping', messageId: 0x1234 });
  t.equal(inspectDatagram(Buffer.from([0x60, 0x00, 0x12, 0x34])).kind, 'pass', 'an empty ACK is not a ping');
});

t.test('critical options the server does not implement are refused, proxy requests are 5.05', async (t) => {
  const critical = inspectDatagram(request(Buffer.from([0xa0]), [{ name: '65001', value: Buffer.from([1]) }]));
  t.equal(critical.kind, 'refuse');
  t.equal(critical.kind === 'refuse' && critical.refusal, 'critical-option');
  t.notOk(critical.kind === 'refuse' && critical.packet.options.some((o) => String(o.name) === '65001'), 'node-coap never sees it');
  const ifMatch = inspectDatagram(request(Buffer.from([0xa0]), [{ name: 'If-Match', value: Buffer.from([1]) }]));
  t.equal(ifMatch.kind === 'refuse' && ifMatch.refusal, 'critical-option', 'If-Match is not implemented');
  const proxy = inspectDatagram(request(Buffer.from([0xa0]), [{ name: 'Proxy-Uri', value: Buffer.from('coap://elsewhere/') }]));
  t.equal(proxy.kind === 'refuse' && proxy.refusal, 'proxy');
  t.equal(inspectDatagram(request(Buffer.from([0xa0]), [{ name: '65000', value: Buffer.from([1]) }])).kind, 'pass', 'an unknown elective option is ignored');
  t.equal(inspectDatagram(request(Buffer.from([0xa0]), [{ name: 'Uri-Query', value: Buffer.from('a=b') }])).kind, 'pass');
});

t.test('Observe is ignored: this server has nothing to observe', async (t) => {
  const verdict = inspectDatagram(Buffer.from([0x40, 0x02, 0x00, 0x01, 0x60]));
  t.equal(verdict.kind, 'pass');
  t.same(verdict.kind === 'pass' && verdict.packet.options, [], 'the empty Observe option is gone');
});

t.test('criticality comes from the option number, whatever the codec calls the option', async (t) => {
  // coap-packet names 2049 and 2053 (OCF's format versions); a name table of ours lacking them let them pass.
  for (const number of [2049, 2053, 2051, 65001]) {
    const verdict = inspectDatagram(request(Buffer.from([0xa0]), [{ name: String(number), value: Buffer.from([1]) }]));
    t.equal(verdict.kind === 'refuse' && verdict.refusal, 'critical-option', `${number} is critical`);
    t.same(verdict.kind === 'refuse' && verdict.packet.options.map((o) => o.name), ['Uri-Path'], `${number} is stripped before node-coap`);
  }
  t.equal(inspectDatagram(request(Buffer.from([0xa0]), [{ name: '2048', value: Buffer.from([1]) }])).kind, 'pass', '2048 is elective');
});

t.test('a message with a format error is rejected (confirmable) or dropped, never passed on', async (t) => {
  const get = (confirmable: boolean) => generate({ code: 'GET', confirmable, messageId: 0x2a2b, token: Buffer.from([9]), options: [{ name: 'Uri-Path', value: Buffer.from('binary') }] as never, payload: Buffer.alloc(0) });
  const marker = Buffer.concat([get(true), Buffer.from([0xff])]);
  t.same(inspectDatagram(marker), { kind: 'reject', messageId: 0x2a2b }, 'a payload marker with no payload');
  t.same(inspectDatagram(Buffer.concat([get(false), Buffer.from([0xff])])), { kind: 'drop', reason: 'malformed' }, 'the same, non-confirmable');
  // An option (delta 0: Uri-Path again) declaring 5 bytes of value, with 2 left.
  t.same(inspectDatagram(Buffer.concat([get(true), Buffer.from([0x05, 0x61, 0x62])])), { kind: 'reject', messageId: 0x2a2b }, 'a truncated option');
  // These two the codec itself refuses: dropped as unparseable before the walk.
  t.same(inspectDatagram(Buffer.concat([get(true), Buffer.from([0x0d])])), { kind: 'drop', reason: 'unparseable' }, 'an extended length with its byte missing');
  t.same(inspectDatagram(Buffer.concat([get(true), Buffer.from([0x0f, 0x00])])), { kind: 'drop', reason: 'unparseable' }, 'length nibble 15');
  t.same(inspectDatagram(Buffer.from([0x44, 0x01, 0, 1, 1, 2])), { kind: 'reject', messageId: 1 }, 'a token running past the end');
  t.equal(inspectDatagram(Buffer.concat([get(true), Buffer.from([0xff, 0x01])])).kind, 'pass', 'a marker with a payload is well-formed');
});
