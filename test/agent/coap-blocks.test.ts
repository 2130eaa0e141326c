import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { generate, parse } from 'coap-packet';
import t, { type Test } from 'tap';
import { CoapTransport } from '../../agent/coap-transport.js';
import { encodeBlockOption, parseBlockOption } from '../../src/shared/wire/block2.js';
import { noise } from '../helpers/fixture.js';

// A CoAP server (or a man in the middle) that answers a Block2 download with another block than
// the one asked for, a short block in mid-file or a block larger than asked for. The agent writes
// each block at the end of the bytes so far, so any of these would make a transfer with a gap or
// repeated bytes (caught only by the transfer hash, after the whole download), and a server that
// keeps answering an earlier block would hold it in a loop. Each is refused at the block.

const FILE = noise(5000, 'coap-blocks');

interface Answer { num: number; more: boolean; size: number; payload?: Buffer }
/** The block a scripted server answers to the request for block `num` of `size` bytes (the `index`th request). */
type Script = (num: number, size: number, index: number) => Answer;

const honest = (pick?: number): Script => (num, size) => {
  const chosen = pick ?? size;
  const start = (num * size / chosen) * chosen;
  return { num: start / chosen, more: start + chosen < FILE.length, size: chosen };
};

async function scriptedServer(t: Test, script: Script): Promise<{ url: string; requests: number[] }> {
  const socket = createSocket('udp4');
  const requests: number[] = [];
  socket.on('message', (message, from) => {
    const request = parse(message);
    const option = request.options.find((o) => o.name === 'Block2');
    const asked = option ? parseBlockOption(option.value)! : { num: 0, size: 1024 };
    requests.push(asked.num);
    const answer = script(asked.num, asked.size, requests.length - 1);
    const start = answer.num * answer.size;
    const payload = answer.payload ?? FILE.subarray(start, start + answer.size);
    socket.send(generate({
      code: '2.05', ack: true, messageId: request.messageId, token: request.token,
      options: [{ name: 'Block2', value: encodeBlockOption(answer.num, answer.more, answer.size) }], payload,
    }), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  return { url: `coap://127.0.0.1:${(socket.address() as AddressInfo).port}`, requests };
}

async function download(t: Test, script: Script, offset = 0): Promise<{ bytes: Buffer; error?: { code?: string; message: string }; requests: number[] }> {
  const { url, requests } = await scriptedServer(t, script);
  const transport = new CoapTransport(url);
  t.teardown(() => transport.close());
  const chunks: Buffer[] = [];
  const sink = { begin: async () => undefined, write: async (chunk: Uint8Array) => void chunks.push(Buffer.from(chunk)) };
  try {
    // The bound only ends a download held in a loop; none of the cases below comes near it.
    await transport.download('/delta/x', offset, FILE.length, sink, AbortSignal.timeout(20_000));
    return { bytes: Buffer.concat(chunks), requests };
  } catch (err) {
    return { bytes: Buffer.concat(chunks), error: err as Error & { code?: string }, requests };
  }
}

t.test('the honest server: the blocks asked for, at the size asked or one the server picks', async (t) => {
  for (const pick of [undefined, 512, 64]) {
    const result = await download(t, honest(pick));
    t.equal(result.error, undefined, `block size ${pick ?? 'as asked'}: no error`);
    t.ok(result.bytes.equals(FILE), `block size ${pick ?? 'as asked'}: the file, byte for byte`);
  }
  const resumed = await download(t, honest(), 3000);
  t.ok(resumed.bytes.equals(FILE.subarray(3000)), 'a resumed download writes from the durable offset');
});

const hostile: Array<[string, Script, string]> = [
  ['skips a block', (num, size, i) => (i === 1 ? { ...honest()(num + 1, size, i) } : honest()(num, size, i)), 'answered block 2'],
  ['answers block 0 to every request', (_num, size, i) => honest()(0, size, i), 'answered block 0'],
  ['answers an earlier block after two', (num, size, i) => (i === 2 ? honest()(0, size, i) : honest()(num, size, i)), 'answered block 0'],
  ['sends a short block with more to come', (num, size, i) => (i === 1 ? { num, more: true, size, payload: FILE.subarray(num * size, num * size + 100) } : honest()(num, size, i)), 'answered 100 bytes'],
  ['answers a larger block than asked for', (num, size, i) => (i === 0 ? honest(256)(num, size, i) : { num: 1, more: true, size: 1024 }), 'of 1024 bytes'],
];

for (const [what, script, message] of hostile) {
  t.test(`a server that ${what}: refused at that block`, async (t) => {
    const result = await download(t, script);
    t.equal(result.error?.code, 'AGENT_REQUEST_REFUSED', 'refused with its code');
    t.match(result.error?.message ?? '', message, 'the message says what came');
    t.ok(FILE.subarray(0, result.bytes.length).equals(result.bytes), 'every byte written is the file\'s own, at its place');
    t.ok(result.requests.length <= 3, `it stopped at once (${result.requests.length} requests)`);
  });
}
