import { createSocket, type RemoteInfo } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { generate, parse, type NamedOption, type ParsedPacket } from 'coap-packet';
import t, { type Test } from 'tap';
import { CoapLoadClient } from '../../src/load/coap-client.js';
import { ECHO_OPTION, echoValue } from '../../src/shared/wire/echo.js';

// The load harness's CoAP client against a scripted server, for two things a real server does
// when it is slow or when many devices share one socket:
// - A separate response (RFC 7252 §5.2.2: an empty ACK first, the answer later as a confirmable
//   message) carries a message ID of the server's choosing, which may equal the message ID of
//   another request of the same client still awaiting its ACK. An answer belongs to the request
//   with its token; taken for the other request, it was acknowledged and dropped, and its own
//   request never had an answer (node-coap's Agent did that: 3 of 50 enrollments of
//   load/harness-auth once went unanswered).
// - Two requests sent at once without an Echo value both come back 4.01 with the same Echo
//   (RFC 9175): each must go again with it, though the first answer already brought it.

type Reply = (packet: Parameters<typeof generate>[0]) => void;

/** A server that hands each request to `script` once (retransmissions are not passed on again). */
async function scriptedServer(t: Test, script: (request: ParsedPacket, reply: Reply) => void): Promise<string> {
  const socket = createSocket('udp4');
  const seen = new Set<number>();
  socket.on('message', (message, from: RemoteInfo) => {
    const request = parse(message);
    const reply: Reply = (packet) => socket.send(generate(packet), from.port, from.address);
    if (request.code === '0.00' || seen.has(request.messageId)) return;
    seen.add(request.messageId);
    script(request, reply);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  return `coap://127.0.0.1:${(socket.address() as AddressInfo).port}`;
}

/** The report's status, or 'unanswered' when none came within `ms` (the client is closed after). */
async function reportWithin(client: CoapLoadClient, body: string, ms: number): Promise<number | 'unanswered'> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<'unanswered'>((resolve) => (timer = setTimeout(() => resolve('unanswered'), ms)));
  try {
    return await Promise.race([client.report(Buffer.from(body)), bound]);
  } finally {
    clearTimeout(timer);
  }
}

t.test('a separate response is matched by its token, not by a message ID another request holds', async (t) => {
  const waiting: ParsedPacket[] = [];
  const url = await scriptedServer(t, (request, reply) => {
    waiting.push(request);
    if (waiting.length < 2) return;
    const [first, second] = waiting as [ParsedPacket, ParsedPacket];
    // The second request: an empty ACK, then its answer as a confirmable message under the
    // first request's message ID, which still awaits its ACK. Then the first is answered.
    reply({ code: '0.00', ack: true, messageId: second.messageId, token: Buffer.alloc(0) });
    reply({ code: '2.04', confirmable: true, messageId: first.messageId, token: second.token });
    reply({ code: '2.04', ack: true, messageId: first.messageId, token: first.token });
  });
  const client = new CoapLoadClient(url);
  t.teardown(() => client.close());
  // The bound only ends a request that lost its answer; an answered one comes back at once.
  const [first, second] = await Promise.all([reportWithin(client, 'first', 3_000), reportWithin(client, 'second', 3_000)]);
  t.equal(first, 204, 'the first request has its piggybacked answer');
  t.equal(second, 204, 'the second request has its separate answer');
});

t.test('two requests refused 4.01 with the same Echo value each go again with it', async (t) => {
  const echo = Buffer.from('0123456789ab');
  const waiting: Array<() => void> = [];
  let repeated = 0;
  const url = await scriptedServer(t, (request, reply) => {
    const carried = echoValue(request.options);
    if (carried?.equals(echo)) {
      repeated++;
      reply({ code: '2.04', ack: true, messageId: request.messageId, token: request.token });
      return;
    }
    // Both first requests are answered once both have arrived: each answer brings the same value.
    waiting.push(() => reply({ code: '4.01', ack: true, messageId: request.messageId, token: request.token, options: [{ name: String(ECHO_OPTION) as NamedOption['name'], value: echo }] }));
    if (waiting.length === 2) for (const answer of waiting) answer();
  });
  const client = new CoapLoadClient(url);
  t.teardown(() => client.close());
  const statuses = await Promise.all([reportWithin(client, 'a', 3_000), reportWithin(client, 'b', 3_000)]);
  t.same(statuses, [204, 204], 'both reports are answered 2.04 after going again with the Echo value');
  t.equal(repeated, 2, 'each went again, with the Echo value');
});

t.test('closing the client ends the exchanges under way', async (t) => {
  let received = 0;
  const url = await scriptedServer(t, () => received++);
  const client = new CoapLoadClient(url);
  const report = reportWithin(client, 'never answered', 3_000).catch((err: Error) => err.message);
  while (received === 0) await new Promise((r) => setTimeout(r, 10));
  client.close();
  t.match(await report, /the transport was closed/, 'the report under way is ended with the client');
});
