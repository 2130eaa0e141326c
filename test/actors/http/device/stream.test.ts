import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import type { HttpResponse } from 'uWebSockets.js';
import { exchange, sendError } from '../../../../src/actors/http/server/respond.js';
import { streamTransfer } from '../../../../src/actors/http/device/stream.js';
import { TransferLocator } from '../../../../src/actors/front-ends/transfer-locator.js';
import { makeFixture } from '../../../helpers/fixture.js';

/** Records what a handler writes, as uWS would put it on the wire. */
function recordingResponse() {
  const wire: string[] = [];
  let aborted: (() => void) | undefined;
  let offset = 0;
  const res = {
    onAborted(handler: () => void) { aborted = handler; return res; },
    onWritable() { return res; },
    cork(fn: () => void) { fn(); return res; },
    writeStatus(status: string) { wire.push(`status ${status}`); return res; },
    writeHeader(name: string, value: string) { wire.push(`header ${name}`); void value; return res; },
    getWriteOffset() { return offset; },
    tryEnd(chunk: Uint8Array, total: number) {
      offset += chunk.byteLength;
      wire.push(`body ${chunk.byteLength}`);
      return [true, offset >= total];
    },
    end(body: string) { wire.push(`end ${body.length}`); return res; },
    endWithoutBody() { wire.push('end-without-body'); return res; },
    close() { wire.push('close'); aborted?.(); return res; },
  };
  return { res: res as unknown as HttpResponse, wire };
}

t.test('a read failure after the headers closes the connection and writes no second answer', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  // The file is shorter than the size the store promised: the read fails mid-body.
  const path = join(fixture.dir, 'short.zst');
  await writeFile(path, Buffer.alloc(100_000, 1));
  const { res, wire } = recordingResponse();
  const ex = exchange(res);
  const location = { kind: 'full' as const, to: 'a'.repeat(64), hash: 'b'.repeat(64), size: 300_000, path };
  const failure = await streamTransfer(ex, location, 0, 300_000, { status: 200, headers: {} }, new TransferLocator(async () => location)).then(() => undefined, (err: Error) => err);
  t.match(failure?.message, /ended early/, 'the failure reaches the caller, for the log');
  sendError(ex, failure); // what the route does with any error
  t.equal(wire.filter((w) => w.startsWith('status')).length, 1, 'exactly one status line');
  t.equal(wire.at(-1), 'close', 'the connection is closed after the partial body');
  t.notOk(wire.some((w) => w.startsWith('end ')), 'no error body follows the partial body');
});
