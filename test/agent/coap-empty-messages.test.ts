import { createSocket, type RemoteInfo } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { generate, parse, type ParsedPacket } from 'coap-packet';
import t, { type Test } from 'tap';
import { CoapTransport } from '../../agent/coap-transport.js';

// The Empty messages of RFC 7252 (code 0.00, no token), which name their request by message
// ID alone: a Reset refuses a request, and a confirmable Empty message is a ping, answered
// with a Reset. A scripted server plays each against the agent's CoAP transport.

type Reply = (request: ParsedPacket, from: RemoteInfo, send: (packet: Parameters<typeof generate>[0]) => void) => void;

async function scriptedServer(t: Test, reply: Reply): Promise<{ url: string; received: ParsedPacket[] }> {
  const socket = createSocket('udp4');
  const received: ParsedPacket[] = [];
  socket.on('message', (message, from) => {
    const packet = parse(message);
    received.push(packet);
    reply(packet, from, (answer) => socket.send(generate(answer), from.port, from.address));
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  return { url: `coap://127.0.0.1:${(socket.address() as AddressInfo).port}`, received };
}

// coap-packet parses a method as its code: POST is 0.02.
const isRequest = (p: ParsedPacket) => p.code === '0.02';

t.test('a Reset of the request ends the exchange at once, without retransmissions', async (t) => {
  const { url, received } = await scriptedServer(t, (request, _from, send) => {
    if (isRequest(request)) send({ code: '0.00', reset: true, messageId: request.messageId });
  });
  const transport = new CoapTransport(url);
  t.teardown(() => transport.close());
  const started = Date.now();
  // Long enough that, without the Reset matched, the first retransmission (2 to 3 s) would come first.
  const outcome = await transport.post('/heartbeat', Buffer.from([0xa0]), 8_000).then(() => 'answered', (err: Error) => err.message);
  t.match(outcome, /reset the exchange/, `the Reset is the answer (${outcome})`);
  t.equal(received.filter(isRequest).length, 1, 'the request went once');
  t.ok(Date.now() - started < 8_000, 'before the deadline');
});

t.test('a Reset naming another message ID leaves the exchange alone', async (t) => {
  const { url } = await scriptedServer(t, (request, _from, send) => {
    if (!isRequest(request)) return;
    send({ code: '0.00', reset: true, messageId: (request.messageId + 1) & 0xffff });
    send({ code: '2.04', ack: true, messageId: request.messageId, token: request.token, payload: Buffer.from([0xa0]) });
  });
  const transport = new CoapTransport(url);
  t.teardown(() => transport.close());
  const answer = await transport.post('/heartbeat', Buffer.from([0xa0]), 8_000);
  t.equal(answer.code, '2.04');
});

t.test('a ping is answered with a Reset of its message ID, and the request goes on', async (t) => {
  const pingId = 4242;
  const { url, received } = await scriptedServer(t, (packet, _from, send) => {
    if (!isRequest(packet)) return;
    send({ code: '0.00', confirmable: true, messageId: pingId });
    // A moment later, so the ping's answer arrives first.
    setTimeout(() => send({ code: '2.04', ack: true, messageId: packet.messageId, token: packet.token, payload: Buffer.from([0xa0]) }), 50);
  });
  const transport = new CoapTransport(url);
  t.teardown(() => transport.close());
  const answer = await transport.post('/heartbeat', Buffer.from([0xa0]), 8_000);
  t.equal(answer.code, '2.04', 'the request was answered');
  const pingAnswer = received.find((p) => p.messageId === pingId);
  t.ok(pingAnswer, 'the ping was answered');
  t.equal(pingAnswer?.code, '0.00', 'with an Empty message');
  t.ok(pingAnswer?.reset && !pingAnswer.ack, 'a Reset, not an ACK');
});
