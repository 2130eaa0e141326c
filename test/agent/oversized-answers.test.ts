import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { HttpTransport } from '../../agent/http-transport.js';
import type { HeartbeatWire } from '../../src/shared/wire/keys.js';

// A server (or a man in the middle) that answers a heartbeat, GET /keys, POST /auth, a report
// or a refusal with a body of many megabytes must not make the agent hold it: a manifest is a few
// hundred bytes, and a device has little memory. The server here streams 64 MiB with
// backpressure and counts what the agent's connection took before it was dropped.

const BODY_BYTES = 64 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x20); // spaces: still "JSON" until the end, so nothing ends the read early

interface Served { bytes: number; complete: boolean }

async function hugeServer(t: Test, status: number): Promise<{ url: string; served: Promise<Served> }> {
  let done!: (s: Served) => void;
  const served = new Promise<Served>((resolve) => (done = resolve));
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    let bytes = 0;
    let closed = false;
    res.on('close', () => {
      closed = true;
    });
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(BODY_BYTES) });
    const pump = () => {
      while (!closed && bytes < BODY_BYTES) {
        bytes += CHUNK.length;
        if (!res.write(CHUNK)) {
          res.once('drain', pump);
          return;
        }
      }
      if (!closed) res.end();
    };
    res.once('close', () => done({ bytes, complete: res.writableFinished }));
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, served };
}

const body: HeartbeatWire = {
  device_id: 'dev-oversized', version_hash: 'a'.repeat(64), hw_info: { arch: 'x64', os: 'linux', free_ram: 1, free_disk: 1 },
  timestamp: 1, version: '1.0.0', artifact: 'app',
};

const report = { device_id: 'dev-oversized', previous_hash: 'a'.repeat(64), new_hash: 'b'.repeat(64), success: true, timestamp: 1 };

// The code it is refused with; undefined: the call succeeds (the body of a report's answer means nothing).
const cases: Array<[string, number, (h: HttpTransport) => Promise<unknown>, string | undefined]> = [
  ['a heartbeat answer', 200, (h) => h.heartbeat(body, 60_000), 'AGENT_MANIFEST_INVALID'],
  ['a GET /keys answer', 200, (h) => h.keys(60_000), 'AGENT_MANIFEST_INVALID'],
  ['a POST /auth answer', 200, (h) => h.authenticate({ device_id: 'dev-oversized' }, 60_000), 'AGENT_MANIFEST_INVALID'],
  ['a refusal (4xx) of a heartbeat', 400, (h) => h.heartbeat(body, 60_000), 'AGENT_REQUEST_REFUSED'],
  ['the answer to a report', 200, (h) => h.report(report, 60_000), undefined],
];

for (const [what, status, call, code] of cases) {
  t.test(`${what} of 64 MiB is dropped after its first bytes, not read whole`, async (t) => {
    const { url, served } = await hugeServer(t, status);
    const http = new HttpTransport(url);
    t.teardown(() => http.close());
    if (code) await t.rejects(call(http), { code }, 'refused');
    else await t.resolves(call(http), 'delivered');
    const { bytes, complete } = await served;
    t.notOk(complete, 'the server never got to send the whole body');
    // Kernel socket buffers on loopback hold a few MiB at most; a whole read is 64.
    t.ok(bytes < 16 * 1024 * 1024, `the agent's connection took ${bytes} bytes before it was dropped`);
  });
}
