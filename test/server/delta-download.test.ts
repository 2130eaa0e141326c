import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { verifyManifest } from '../../src/shared/signing.js';
import { firmware, makeFixture, nextVersion, sha256Hex } from '../helpers/fixture.js';
import { getBytes, heartbeatUntilSigned } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';
import { needs } from '../helpers/system-tools.js';

// A device on v1 asks for app; the server holds v1 because another track ships it.
t.test('a device on v1 gets a signed delta that stock zstd and bspatch turn into v2', needs('zstd', 'bspatch'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(2_000_000, 'v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'v2'));
  const server = await startTestServer(fixture, [
    { name: 'app', version: '2.0.0', binary: v2.path },
    { name: 'legacy', version: '1.0.0', binary: v1.path },
  ], { default_artifact: 'app' });
  t.teardown(() => server.stop());

  const manifest = await heartbeatUntilSigned(server.url, v1.hash, 'app');
  t.equal(manifest.update_available, true);
  t.equal(manifest.target_hash, v2.hash);
  t.equal(manifest.target_size, v2.size);
  t.equal(manifest.delta_endpoint, `/delta/${v1.hash}/${v2.hash}`);
  t.notOk(manifest.binary_endpoint, 'delta mode sets only the delta endpoint');
  t.notOk('delta_format' in manifest, 'a heartbeat naming no delta_formats gets bsdiff40, and no delta_format');
  t.notOk(manifest.retry_after);
  t.ok(verifyManifest(fixture.publicKey, manifest.target_hash, manifest.delta_hash, manifest.signature!), 'signature verifies with the public key');
  t.notOk(verifyManifest(fixture.publicKey, v1.hash, manifest.delta_hash, manifest.signature!), 'the signature binds the target hash');

  const { status, body } = await getBytes(`${server.url}${manifest.delta_endpoint}`);
  t.equal(status, 200);
  t.equal(body.length, manifest.delta_size);
  t.equal(sha256Hex(body), manifest.delta_hash, 'the bytes on the wire hash to delta_hash');
  t.equal(manifest.total_chunks, Math.ceil(manifest.delta_size / manifest.chunk_size));
  t.ok(body.length < v2.size / 10, `the delta (${body.length} bytes) is much smaller than the target (${v2.size})`);

  const zst = join(fixture.dir, 'delta.zst');
  await writeFile(zst, body);
  execFileSync('zstd', ['-d', '-q', '-f', zst, '-o', join(fixture.dir, 'delta.patch')]);
  execFileSync('bspatch', [v1.path, join(fixture.dir, 'rebuilt.bin'), join(fixture.dir, 'delta.patch')]);
  t.equal(sha256Hex(await readFile(join(fixture.dir, 'rebuilt.bin'))), v2.hash, 'stock tools rebuild v2 bit for bit');
});

t.test('Range requests resume a download; an unsatisfiable range is 416', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(300_000, 'r1'));
  const v2 = await fixture.writeBinary('v2.bin', firmware(300_000, 'r2'));
  const server = await startTestServer(fixture, [
    { name: 'app', version: '2', binary: v2.path },
    { name: 'old', version: '1', binary: v1.path },
  ], { default_artifact: 'app' });
  t.teardown(() => server.stop());
  const manifest = await heartbeatUntilSigned(server.url, v1.hash);
  const url = `${server.url}${manifest.delta_endpoint}`;
  const whole = (await getBytes(url)).body;
  t.ok(whole.length > 1000, 'unrelated binaries give a large delta');

  const head = await getBytes(url, { Range: 'bytes=0-999' });
  t.equal(head.status, 206);
  t.equal(head.headers.get('content-range'), `bytes 0-999/${whole.length}`);
  t.same(head.body, whole.subarray(0, 1000));

  const tail = await getBytes(url, { Range: 'bytes=1000-' });
  t.equal(tail.status, 206);
  t.equal(tail.headers.get('content-range'), `bytes 1000-${whole.length - 1}/${whole.length}`);
  t.equal(sha256Hex(Buffer.concat([head.body, tail.body])), manifest.delta_hash, 'the two halves hash to delta_hash');

  const suffix = await getBytes(url, { Range: 'bytes=-10' });
  t.equal(suffix.status, 206);
  t.same(suffix.body, whole.subarray(whole.length - 10));

  const beyond = await getBytes(url, { Range: `bytes=${whole.length}-` });
  t.equal(beyond.status, 416);
  t.equal(beyond.headers.get('content-range'), `bytes */${whole.length}`);
  t.equal(JSON.parse(beyond.body.toString()).error.code, 'INVALID_RANGE');
});

t.test('full mode: the compressed target rebuilds with stock zstd', needs('zstd'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(500_000, 'f2'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }], { allow_full_download: true });
  t.teardown(() => server.stop());
  const manifest = await heartbeatUntilSigned(server.url, sha256Hex(Buffer.from('a binary the server never saw')));
  t.equal(manifest.binary_endpoint, `/binary/${v2.hash}`);
  t.notOk(manifest.delta_endpoint);
  t.ok(verifyManifest(fixture.publicKey, v2.hash, manifest.delta_hash, manifest.signature!));
  const { status, body } = await getBytes(`${server.url}${manifest.binary_endpoint}`);
  t.equal(status, 200);
  t.equal(sha256Hex(body), manifest.delta_hash, 'in full mode delta_hash is the hash of the compressed target');
  const zst = join(fixture.dir, 'full.zst');
  await writeFile(zst, body);
  execFileSync('zstd', ['-d', '-q', '-f', zst, '-o', join(fixture.dir, 'full.bin')]);
  t.equal(sha256Hex(await readFile(join(fixture.dir, 'full.bin'))), v2.hash);
});
