import { readFile } from 'node:fs/promises';
import t from 'tap';
import { coapChunkSize } from '../../src/actors/coap/device/block2.js';
import { verifyManifest } from '../../src/shared/signing.js';
import { manifestOf, startCoapTestServer, type CoapClient } from '../helpers/coap.js';
import { firmware, makeFixture, nextVersion, randomHash } from '../helpers/fixture.js';
import { heartbeat, heartbeatUntilSigned } from '../helpers/http.js';

// Every row of the decision table (docs/protocol.md, "What a manifest means"), asked over HTTP and over CoAP of one server:
// the same decision, the same values, the same signature. The only field that differs by
// transport is the chunk (docs/protocol.md: a Range length over HTTP, a Block2 size over CoAP).

function expectedOverCoap(http: Record<string, any>): Record<string, unknown> {
  const chunk = coapChunkSize(http.chunk_size);
  return { ...http, chunk_size: chunk, total_chunks: Math.ceil(http.delta_size / chunk) };
}

async function bothTransports(baseUrl: string, client: CoapClient, versionHash: string, artifact?: string) {
  const [http, coap] = await Promise.all([heartbeat(baseUrl, versionHash, artifact), client.heartbeat(versionHash, artifact)]);
  return { http, coap };
}

t.test('rows 1 to 4 and 7 (no full download): the CoAP manifest equals the HTTP one', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(1_500_000, 'row-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'row-v2'));
  const s = await startCoapTestServer(fixture, [
    { name: 'app', version: '2.0.0', binary: v2.path },
    { name: 'legacy', version: '1.0.0', binary: v1.path },
  ], { default_artifact: 'app', store: { full_compression_level: 1 } });
  t.teardown(() => s.stop());

  await t.test('row 1: an unknown artifact is 4.04 with the code HTTP answers with', async (t) => {
    const { http, coap } = await bothTransports(s.server.url, s.client, v1.hash, 'nope');
    t.equal(http.status, 404);
    t.equal(coap.code, '4.04');
    t.equal(coap.payload.toString().split(':')[0], http.json.error.code);
    t.equal(http.json.error.code, 'ARTIFACT_NOT_FOUND');
  });

  await t.test('row 2: a device on the target is told there is no update', async (t) => {
    const { http, coap } = await bothTransports(s.server.url, s.client, v2.hash, 'app');
    t.equal(coap.code, '2.05');
    t.equal(coap.option('Content-Format')?.readUIntBE(0, 1), 60, 'Content-Format application/cbor');
    t.same(manifestOf(coap), expectedOverCoap(http.json));
    t.equal(http.json.update_available, false);
  });

  await t.test('row 4: a missing delta answers retry_after on both, unsigned', async (t) => {
    // Both heartbeats arrive within a millisecond; generating a 1.5 MB delta takes far longer.
    const { http, coap } = await bothTransports(s.server.url, s.client, v1.hash, 'app');
    const manifest = manifestOf(coap);
    t.same(manifest, expectedOverCoap(http.json));
    t.ok((manifest.retry_after as number) > 0);
    t.notOk(manifest.signature);
  });

  await t.test('row 3: an existing delta is served signed, with the same signature', async (t) => {
    await heartbeatUntilSigned(s.server.url, v1.hash, 'app');
    const { http, coap } = await bothTransports(s.server.url, s.client, v1.hash, 'app');
    const manifest = manifestOf(coap);
    t.same(manifest, expectedOverCoap(http.json));
    t.equal(manifest.delta_endpoint, `/delta/${v1.hash}/${v2.hash}`);
    t.equal(manifest.signature, http.json.signature);
    t.ok(verifyManifest(fixture.publicKey, manifest.target_hash as string, manifest.delta_hash as string, manifest.signature as string));
    t.equal(manifest.chunk_size, 1024, 'the 64 KiB HTTP chunk becomes the largest Block2 size');
  });

  await t.test('row 7: an unknown binary without full download stays stranded', async (t) => {
    const { http, coap } = await bothTransports(s.server.url, s.client, randomHash(), 'app');
    t.same(manifestOf(coap), expectedOverCoap(http.json));
    t.equal(http.json.update_available, false);
  });

  await t.test('the default track answers a heartbeat without an artifact', async (t) => {
    const { http, coap } = await bothTransports(s.server.url, s.client, v2.hash);
    t.same(manifestOf(coap), expectedOverCoap(http.json));
    t.equal(http.json.artifact, 'app');
  });

  await t.test('a bad hash or track key is 4.00 where HTTP says 400, with the same code', async (t) => {
    for (const [hash, artifact, code] of [['ABC', 'app', 'INVALID_HASH'], [v1.hash, '..', 'INVALID_ARTIFACT_KEY'], [v1.hash, 'app/linux', 'INVALID_ARTIFACT_KEY']] as const) {
      const { http, coap } = await bothTransports(s.server.url, s.client, hash, artifact);
      t.equal(http.status, 400);
      t.equal(coap.code, '4.00', `${hash.slice(0, 8)} ${artifact}`);
      t.equal(coap.payload.toString().split(':')[0], code);
      t.equal(http.json.error.code, code);
    }
  });
});

t.test('rows 5 and 6 (size cap and full download): the CoAP manifest equals the HTTP one', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(1_200_000, 'cap-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'cap-v2'));
  const s = await startCoapTestServer(fixture, [
    { name: 'app', version: '2.0.0', binary: v2.path },
    { name: 'legacy', version: '1.0.0', binary: v1.path },
  ], { default_artifact: 'app', allow_full_download: true, store: { delta_max_source_mb: 1, full_compression_level: 1 } });
  t.teardown(() => s.stop());

  await t.test('row 5: a known binary over the cap gets full mode, signed alike', async (t) => {
    await heartbeatUntilSigned(s.server.url, v1.hash, 'app');
    const { http, coap } = await bothTransports(s.server.url, s.client, v1.hash, 'app');
    const manifest = manifestOf(coap);
    t.same(manifest, expectedOverCoap(http.json));
    t.equal(manifest.binary_endpoint, `/binary/${v2.hash}`);
    t.notOk(manifest.delta_endpoint);
    t.equal(manifest.signature, http.json.signature);
  });

  await t.test('row 6: an unknown binary with full download allowed gets full mode', async (t) => {
    const unknown = randomHash();
    await heartbeatUntilSigned(s.server.url, unknown, 'app');
    const { http, coap } = await bothTransports(s.server.url, s.client, unknown, 'app');
    const manifest = manifestOf(coap);
    t.same(manifest, expectedOverCoap(http.json));
    t.equal(manifest.binary_endpoint, `/binary/${v2.hash}`);
    t.ok(verifyManifest(fixture.publicKey, v2.hash, manifest.delta_hash as string, manifest.signature as string));
  });
});
