import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import engine from 'updater-delta-engine';
import { verifyManifest } from '../../src/shared/signing.js';
import { encodeHeartbeat } from '../../src/shared/wire/cbor.js';
import { heartbeatFieldsFor, manifestOf, startCoapTestServer } from '../helpers/coap.js';
import { firmware, makeFixture, nextVersion, sha256Hex } from '../helpers/fixture.js';
import { getBytes, postJson } from '../helpers/http.js';
import type { Manifest } from '../../src/messages/manifester.js';

// Patch-format negotiation (docs/protocol.md, "Patch formats"): the device names the formats it
// applies in delta_formats; the manifest names the one served in delta_format (left out for
// bsdiff40) and its own endpoint; each format of a pair is a file of its own in the store.
// A device that names nothing keeps getting BSDIFF40 (delta-download.test.ts runs stock
// bspatch on it); a malformed list is refused, 400 INVALID_FIELD and CoAP 4.00.

function heartbeatWith(formats: unknown, versionHash: string): Record<string, unknown> {
  return { ...heartbeatFieldsFor(versionHash, 'app'), ...(formats === undefined ? {} : { delta_formats: formats }) };
}

async function signedWith(url: string, formats: unknown, versionHash: string): Promise<Manifest> {
  for (let i = 0; i < 600; i++) {
    const { status, json } = await postJson(`${url}/heartbeat`, heartbeatWith(formats, versionHash));
    if (status !== 200) throw new Error(`heartbeat answered ${status}: ${JSON.stringify(json)}`);
    if (json.signature) return json as Manifest;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('no signed manifest');
}

t.test('a device naming bsdiff-lzma gets it; one naming nothing gets bsdiff40; both are stored', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(1_500_000, 'f1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'f2'));
  const s = await startCoapTestServer(fixture, [
    { name: 'app', version: '2', binary: v2.path },
    { name: 'old', version: '1', binary: v1.path },
  ], { default_artifact: 'app' });
  let stopped = false;
  t.teardown(() => (stopped ? undefined : s.stop()));

  const lzma = await signedWith(s.server.url, ['bsdiff-lzma', 'bsdiff40'], v1.hash);
  t.equal(lzma.delta_format, 'bsdiff-lzma', 'the manifest names the format served');
  t.equal(lzma.delta_endpoint, `/delta/${v1.hash}/${v2.hash}/bsdiff-lzma`);
  t.ok(verifyManifest(fixture.publicKey, lzma.target_hash, lzma.delta_hash, lzma.signature!), 'signed as every delta is');
  const { status, body } = await getBytes(`${s.server.url}${lzma.delta_endpoint}`);
  t.equal(status, 200);
  t.equal(body.length, lzma.delta_size);
  t.equal(sha256Hex(body), lzma.delta_hash, 'the bytes on the wire hash to delta_hash');
  t.equal(body.subarray(0, 8).toString('latin1'), 'BSDLZMA1', 'served as written, not zstd-compressed again');
  await writeFile(join(fixture.dir, 'lzma.patch'), body);
  engine.patch(v1.path, join(fixture.dir, 'lzma.patch'), join(fixture.dir, 'rebuilt'));
  t.equal(sha256Hex(await readFile(join(fixture.dir, 'rebuilt'))), v2.hash, 'the engine rebuilds v2 from it');

  const plain = await signedWith(s.server.url, undefined, v1.hash);
  t.notOk('delta_format' in plain, 'no delta_format for bsdiff40');
  t.equal(plain.delta_endpoint, `/delta/${v1.hash}/${v2.hash}`);
  t.not(plain.delta_hash, lzma.delta_hash, 'another file');
  t.ok(lzma.delta_size < plain.delta_size, `bsdiff-lzma ${lzma.delta_size} < bsdiff40 ${plain.delta_size} bytes`);
  const stored = (await readdir(join(fixture.dir, 'store', 'deltas'))).filter((n) => n.startsWith(v1.hash) && n.includes('.delta.')).sort();
  t.same(stored, [`${v1.hash}_${v2.hash}.delta.bsdiff-lzma`, `${v1.hash}_${v2.hash}.delta.zst`], 'one content-addressed file per format');

  const unknown = await signedWith(s.server.url, ['courgette', 'bsdiff40'], v1.hash);
  t.notOk('delta_format' in unknown, 'an unknown name is skipped for the next');
  t.equal(unknown.delta_hash, plain.delta_hash);
  t.equal((await signedWith(s.server.url, ['zucchini'], v1.hash)).delta_hash, plain.delta_hash, 'nothing known named: bsdiff40');

  const coap = await s.client.request({ method: 'POST', path: '/heartbeat', payload: encodeHeartbeat(heartbeatWith(['bsdiff-lzma'], v1.hash)), contentFormat: 60 });
  t.equal(coap.code, '2.05');
  const overCoap = manifestOf(coap);
  t.equal(overCoap.delta_format, 'bsdiff-lzma', 'CBOR key 15 carries the format over CoAP');
  t.equal(overCoap.delta_hash, lzma.delta_hash);
  const download = await s.client.download(lzma.delta_endpoint!, 1024);
  t.equal(sha256Hex(download.body), lzma.delta_hash, 'the CoAP delta resource of the format serves the same bytes');
  const wrong = await getBytes(`${s.server.url}/delta/${v1.hash}/${v2.hash}/courgette`);
  t.equal(wrong.status, 400, 'a format the server does not serve is refused');

  // A restart finds the stored file by its name, checks it fits, and serves it again.
  stopped = true;
  await s.stop();
  const again = await startCoapTestServer(fixture, [
    { name: 'app', version: '2', binary: v2.path },
    { name: 'old', version: '1', binary: v1.path },
  ], { default_artifact: 'app' });
  t.teardown(() => again.stop());
  const first = await postJson(`${again.server.url}/heartbeat`, heartbeatWith(['bsdiff-lzma'], v1.hash));
  t.equal(first.json.delta_hash, lzma.delta_hash, 'after a restart the first heartbeat is answered from the stored file');
});

t.test('a malformed delta_formats is refused over HTTP and CoAP', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(50_000, 'm1'));
  const s = await startCoapTestServer(fixture, [{ name: 'app', version: '1', binary: v1.path }], { default_artifact: 'app' });
  t.teardown(() => s.stop());
  const bad: Array<[string, unknown]> = [
    ['a string', 'bsdiff-lzma'],
    ['nine names', Array.from({ length: 9 }, (_, i) => `f${i}`)],
    ['a name of 33 characters', ['x'.repeat(33)]],
    ['an empty name', ['']],
    ['a number', [1]],
    ['a map', { 0: 'bsdiff40' }],
  ];
  for (const [name, formats] of bad) {
    const http = await postJson(`${s.server.url}/heartbeat`, heartbeatWith(formats, v1.hash));
    t.equal(http.status, 400, `${name}: HTTP 400`);
    t.equal(http.json?.error?.code, 'INVALID_FIELD', `${name}: INVALID_FIELD`);
    const coap = await s.client.request({ method: 'POST', path: '/heartbeat', payload: encodeHeartbeat(heartbeatWith(formats, v1.hash)), contentFormat: 60 });
    t.equal(coap.code, '4.00', `${name}: CoAP 4.00`);
  }
  const fine = await postJson(`${s.server.url}/heartbeat`, heartbeatWith(Array.from({ length: 8 }, (_, i) => `f${i}`), v1.hash));
  t.equal(fine.status, 200, 'eight names are fine');
});
