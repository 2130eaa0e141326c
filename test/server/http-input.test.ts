import { link, mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { firmware, makeFixture, randomHash, sha256Hex } from '../helpers/fixture.js';
import { getBytes, heartbeat, heartbeatUntilSigned, metricValue, postJson } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';
import { heartbeatFieldsFor, startCoapTestServer } from '../helpers/coap.js';
import { encodeHeartbeat, encodeReport } from '../../src/shared/wire/cbor.js';

// Outside input over HTTP: refused with a stable code, and the server keeps answering. The
// raw-socket cases (framing, Content-Length the HTTP engine refuses) are in http-framing.test.ts,
// the CoAP ones in coap-hostile.test.ts, the publish path rules in publish-paths.test.ts.

// The three tests that need a plain server with one track share it (a start costs ~0.8 s of
// CPU): none reads what another leaves. Only the report test posts /report, and it counts only
// that route; the others' devices are named apart.
const plain = await (async () => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(20_000, 'input'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }]);
  t.teardown(() => server.stop());
  return { v2, server };
})();

t.test('bad device input gets a clear error and the server keeps answering', async (t) => {
  const { v2, server } = plain;
  const hb = (body: unknown) => postJson(`${server.url}/heartbeat`, body);
  const whole = { device_id: 'd', version_hash: v2.hash, hw_info: { arch: 'arm64', os: 'linux', free_ram: 1, free_disk: 1 }, timestamp: 1_700_000_000, version: '2' };

  const huge = await hb({ device_id: 'd', version_hash: v2.hash, version: 'x'.repeat(10_000) });
  t.equal(huge.status, 413, 'a large body is refused before it is parsed');
  t.equal(huge.json.error.code, 'BODY_TOO_LARGE');

  const chunked = await fetch(`${server.url}/heartbeat`, {
    method: 'POST',
    body: new ReadableStream({ start(c) { for (let i = 0; i < 10; i++) c.enqueue(new Uint8Array(1024)); c.close(); } }),
    duplex: 'half',
  } as RequestInit);
  t.equal(chunked.status, 413, 'a chunked body that grows past the cap is refused too');

  const notJson = await hb('{"device_id":');
  t.equal(notJson.status, 400);
  t.equal(notJson.json.error.code, 'MALFORMED_BODY');
  const notObject = await hb('[1,2]');
  t.equal(notObject.json.error.code, 'MALFORMED_BODY');
  const upper = await hb({ device_id: 'd', version_hash: v2.hash.toUpperCase() });
  t.equal(upper.status, 400);
  t.equal(upper.json.error.code, 'INVALID_HASH');
  const short = await hb({ device_id: 'd', version_hash: 'abc' });
  t.equal(short.json.error.code, 'INVALID_HASH');
  const noDevice = await hb({ version_hash: v2.hash });
  t.equal(noDevice.json.error.code, 'INVALID_FIELD');
  const badHw = await hb({ ...whole, hw_info: { ...whole.hw_info, free_ram: -1 } });
  t.equal(badHw.json.error.code, 'INVALID_FIELD');
  t.match(badHw.json.error.message, /hw_info\.free_ram/);

  const badPath = await getBytes(`${server.url}/delta/${'A'.repeat(64)}/${v2.hash}`);
  t.equal(badPath.status, 400, 'a hash in a path is checked before any file lookup');
  const traversal = await getBytes(`${server.url}/binary/..%2F..%2Fetc%2Fpasswd`);
  t.equal(traversal.status, 400);
  const unknown = await getBytes(`${server.url}/binary/${randomHash()}`);
  t.equal(unknown.status, 404);
  t.equal(JSON.parse(unknown.body.toString()).error.code, 'BINARY_NOT_FOUND');
  const unknownDelta = await getBytes(`${server.url}/delta/${randomHash()}/${v2.hash}`);
  t.equal(JSON.parse(unknownDelta.body.toString()).error.code, 'DELTA_NOT_FOUND');

  const route = await getBytes(`${server.url}/nope`);
  t.equal(route.status, 404);
  const method = await getBytes(`${server.url}/heartbeat`);
  t.equal(method.status, 405);

  const ok = await hb(whole);
  t.equal(ok.status, 200, 'still answering after all of that');
});

// The heartbeat's body is decoded straight from the HTTP engine's memory when it comes in one
// chunk, and from the chunks joined otherwise (server/body.ts): both decode UTF-8 alike.
t.test('a heartbeat body in chunks split inside a character reads as one in a piece; a BOM is refused either way', async (t) => {
  const { v2, server } = plain;
  const body = (id: string) => JSON.stringify({ device_id: id, version_hash: v2.hash, hw_info: { arch: 'arm64', os: 'linux', free_ram: 1, free_disk: 1 }, timestamp: 1_700_000_000, version: '2' });
  const inChunks = (bytes: Buffer, cuts: number[]) => fetch(`${server.url}/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: new ReadableStream({
      async start(c) {
        let from = 0;
        for (const cut of [...cuts, bytes.length]) {
          c.enqueue(new Uint8Array(bytes.subarray(from, cut)));
          from = cut;
          // Apart in time, so that each piece reaches the server as a chunk of its own.
          await new Promise((resolve) => setTimeout(resolve, 30));
        }
        c.close();
      },
    }),
    duplex: 'half',
  } as RequestInit);

  const split = 'chunked-d\u00e9vice-\u00fc';
  const bytes = Buffer.from(body(split));
  const inside = bytes.indexOf(Buffer.from('\u00e9')) + 1; // between the two bytes of é
  const answer = await inChunks(bytes, [inside, inside + 5]);
  t.equal(answer.status, 200, 'answered');
  const whole = await postJson(`${server.url}/heartbeat`, JSON.parse(body('whole-d\u00e9vice-\u00fc')));
  t.equal(whole.status, 200);
  // The inventory holds both ids as sent: neither decode lost or replaced a byte.
  for (const id of [split, 'whole-d\u00e9vice-\u00fc']) {
    const device = await eventually(`the inventory holds ${id}`, () => adminCall(server.url, 'GET', `/admin/devices/${encodeURIComponent(id)}`), (d) => d.status === 200);
    t.equal(device.json.device_id, id, `${id} is stored as sent`);
  }

  const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(body('bom'))]);
  for (const [how, sent] of [['in one piece', postRaw(server.url, bom)], ['in chunks', inChunks(bom, [2, 10])]] as const) {
    const refused = await sent;
    t.equal(refused.status, 400, `a body that starts with a BOM is refused, ${how}`);
    t.equal(((await refused.json()) as { error: { code: string } }).error.code, 'MALFORMED_BODY');
  }
});

function postRaw(url: string, bytes: Buffer): Promise<Response> {
  return fetch(`${url}/heartbeat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bytes });
}

t.test('every heartbeat and report field the protocol requires is required, over HTTP and CoAP alike', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(20_000, 'fields'));
  const s = await startCoapTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }]);
  t.teardown(() => s.stop());
  const heartbeat = heartbeatFieldsFor(v2.hash) as Record<string, any>;
  const report = { device_id: 'd1', previous_hash: '', new_hash: v2.hash, success: true, rollback_reason: '', timestamp: 1_700_000_000 };
  const without = (body: Record<string, any>, path: string) => {
    const copy = structuredClone(body);
    const [head, tail] = path.split('.');
    if (tail) delete copy[head!][tail];
    else delete copy[head!];
    return copy;
  };
  const both = async (kind: 'heartbeat' | 'report', body: Record<string, unknown>) => {
    const http = await postJson(`${s.server.url}/${kind}`, body);
    const payload = kind === 'heartbeat'
      ? encodeHeartbeat(body)
      : encodeReport(body);
    const coap = await s.client.request({ method: 'POST', path: `/${kind}`, payload, contentFormat: 60 });
    return { http: http.status, code: http.json?.error?.code, message: http.json?.error?.message ?? '', coap: coap.code, coapText: coap.payload.toString() };
  };
  t.match(await both('heartbeat', heartbeat), { http: 200, coap: '2.05' }, 'a whole heartbeat is answered');
  for (const field of ['device_id', 'version_hash', 'hw_info', 'timestamp', 'version', 'hw_info.arch', 'hw_info.os', 'hw_info.free_ram', 'hw_info.free_disk']) {
    const answer = await both('heartbeat', without(heartbeat, field));
    t.match(answer, { http: 400, coap: '4.00' }, `a heartbeat without ${field} is refused over both`);
    t.ok(answer.message.includes(field) && answer.coapText.includes(field), `and the error names ${field}`);
  }
  t.match(await both('heartbeat', without(heartbeat, 'artifact')), { http: 200, coap: '2.05' }, 'artifact is optional');
  t.match(await both('report', report), { http: 204, coap: '2.04' }, 'a whole report is accepted (previous_hash may be empty)');
  for (const field of ['device_id', 'previous_hash', 'new_hash', 'success', 'timestamp']) {
    t.match(await both('report', without(report, field)), { http: 400, coap: '4.00' }, `a report without ${field} is refused over both`);
  }
  t.match(await both('report', without(report, 'rollback_reason')), { http: 204, coap: '2.04' }, 'rollback_reason is optional');
});

t.test('reports are accepted with 204, validated and counted', async (t) => {
  const { v2, server } = plain;
  const report = { device_id: 'd1', previous_hash: randomHash(), new_hash: v2.hash, success: true, rollback_reason: '', timestamp: 1_700_000_000 };
  const accepted = await postJson(`${server.url}/report`, report);
  t.equal(accepted.status, 204);
  t.equal(accepted.json, undefined, 'no body');
  const failed = await postJson(`${server.url}/report`, { ...report, success: false, rollback_reason: 'health check failed' });
  t.equal(failed.status, 204);
  const invalid = await postJson(`${server.url}/report`, { ...report, success: 'yes' });
  t.equal(invalid.status, 400);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  t.equal(metricValue(metrics, 'updater_update_reports_total', { result: 'success' }), 1);
  t.equal(metricValue(metrics, 'updater_update_reports_total', { result: 'failure' }), 1);
  // Each request is timed under its route and status class.
  t.equal(metricValue(metrics, 'updater_http_request_seconds_count', { route: 'report', status: '2xx' }), 2);
  t.equal(metricValue(metrics, 'updater_http_request_seconds_count', { route: 'report', status: '4xx' }), 1);
});

t.test('heartbeats are timed under their route and status class, the refused ones too', async (t) => {
  const { v2, server } = plain;
  const counts = async () => {
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    return ['2xx', '4xx'].map((status) => metricValue(metrics, 'updater_http_request_seconds_count', { route: 'heartbeat', status }));
  };
  const [answered, refused] = await counts();
  t.equal((await heartbeat(server.url, v2.hash)).status, 200);
  t.equal((await heartbeat(server.url, randomHash())).status, 200);
  t.equal((await postJson(`${server.url}/heartbeat`, '{"device_id":')).status, 400);
  t.equal((await postJson(`${server.url}/heartbeat`, { device_id: 'd', version: 'x'.repeat(10_000) })).status, 413);
  t.same(await counts(), [answered! + 2, refused! + 2]);
});

t.test('health lists every track', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const a = await fixture.writeBinary('a.bin', firmware(1000, 'ha'));
  const b = await fixture.writeBinary('b.bin', firmware(1000, 'hb'));
  const server = await startTestServer(fixture, [
    { name: 'app', os: 'linux', arch: 'arm64', version: '1.4.0', binary: a.path },
    { name: 'tool', version: '0.1', binary: b.path },
  ], { default_artifact: 'tool' });
  t.teardown(() => server.stop());
  const health = await (await fetch(`${server.url}/health`)).json();
  t.same(health, { status: 'ok', store: 'writable', artifacts: { 'app/linux/arm64': { version: '1.4.0', hash: a.hash }, tool: { version: '0.1', hash: b.hash } } });
});

t.test('a hard link inside a publish root to one of the server\'s own files is refused', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  // One file system: the fixture's directory holds the key, the roots and the store.
  const builds = join(fixture.dir, 'builds');
  await mkdir(builds);
  const storeDir = join(fixture.dir, 'store');
  const statePath = join(fixture.dir, 'state.json');
  const app = await fixture.writeBinary('builds/app.bin', firmware(20_000, 'hl-app'));
  const server = await startTestServer(fixture, [], { allow_full_download: true, store: { dir: storeDir, state_file: statePath, publish_roots: [builds] } });
  t.teardown(() => server.stop());
  const publish = (binary: string) => adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version: '1', binary });
  t.equal((await publish(app.path)).status, 200, 'a file built into the root is published (the state file now exists)');
  // The fleet actor holds its SQLite database open in WAL mode: the write-ahead log exists.
  await eventually('the database has a write-ahead log', () => readdir(storeDir), (names) => names.includes('updater.db-wal'));

  const targets: [string, string][] = [
    ['the signing key', fixture.keyPath],
    ['the admin token file', fixture.tokenPath],
    ['the configuration file', server.configPath],
    ['the state file', statePath],
    ['the database', join(storeDir, 'updater.db')],
    ['the database\'s write-ahead log', join(storeDir, 'updater.db-wal')],
    ['a stored binary', join(storeDir, 'binaries', `${app.hash}.bin`)],
  ];
  for (const [i, [what, target]] of targets.entries()) {
    const hardLink = join(builds, `hardlink-${i}`);
    await link(target, hardLink);
    // A track of its own each, so that a file wrongly published stays a track's target.
    const answer = await adminCall(server.url, 'POST', '/admin/artifacts', { name: `leak-${i}`, version: '1', binary: hardLink });
    t.equal(answer.status, 403, `a hard link to ${what}`);
    t.equal(answer.json?.error?.code, 'PUBLISH_PATH_FORBIDDEN', `a hard link to ${what}`);
  }
  t.same(await readdir(join(storeDir, 'binaries')), [`${app.hash}.bin`], 'nothing of a refused file was stored, not even a temporary');
  // A device asking for the key's track would make the server compress it to /binary/{hash}.
  t.not((await heartbeat(server.url, randomHash(), 'leak-0')).status, 200, 'no track holds the key');
  t.equal((await getBytes(`${server.url}/binary/${sha256Hex(await readFile(fixture.keyPath))}`)).status, 404, 'the key is not downloadable');
  t.equal((await getBytes(`${server.url}/binary/${sha256Hex(await readFile(fixture.tokenPath))}`)).status, 404, 'nor the token');
  const served = await heartbeatUntilSigned(server.url, randomHash(), 'app');
  t.equal((await getBytes(`${server.url}${served.binary_endpoint}`)).status, 200, 'while the file published from the root is');
  const copied = await fixture.writeBinary('builds/app2.bin', firmware(20_000, 'hl-app2'));
  await link(copied.path, join(builds, 'app2-again.bin'));
  t.equal((await publish(join(builds, 'app2-again.bin'))).status, 200, 'a hard link between two build outputs is published');
});
