import t from 'tap';
import { blockOption, manifestOf, parseBlock2, requestDatagram, startCoapTestServer } from '../helpers/coap.js';
import { firmware, makeFixture, randomHash, sha256Hex } from '../helpers/fixture.js';
import { getBytes, heartbeatUntilSigned } from '../helpers/http.js';

t.test('downloads over CoAP Block2', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  // Unrelated binaries give a delta of tens of kilobytes: hundreds of blocks.
  const v1 = await fixture.writeBinary('v1.bin', firmware(60_000, 'dl-v1'));
  const v2 = await fixture.writeBinary('v2.bin', firmware(60_000, 'dl-v2'));
  const s = await startCoapTestServer(fixture, [
    { name: 'app', version: '2', binary: v2.path },
    { name: 'old', version: '1', binary: v1.path },
  ], { default_artifact: 'app', allow_full_download: true, store: { full_compression_level: 1 } });
  t.teardown(() => s.stop());
  const manifest = await heartbeatUntilSigned(s.server.url, v1.hash, 'app');
  const deltaPath = manifest.delta_endpoint!;
  const overHttp = (await getBytes(`${s.server.url}${deltaPath}`)).body;
  const etag = Buffer.from(manifest.delta_hash, 'hex').subarray(0, 8);

  await t.test('a delta fetched block by block equals the HTTP bytes, with the hash as ETag on every block', async (t) => {
    const { body, blocks } = await s.client.download(deltaPath, 1024);
    t.equal(body.length, overHttp.length);
    t.ok(body.equals(overHttp), 'the same bytes as over HTTP');
    t.equal(sha256Hex(body), manifest.delta_hash);
    t.equal(blocks.length, Math.ceil(overHttp.length / 1024));
    t.ok(blocks.every((b) => b.option('ETag')?.equals(etag)), 'every block carries the first 8 bytes of delta_hash as ETag');
    t.equal(blocks[0]!.option('Size2')?.readUIntBE(0, blocks[0]!.option('Size2')!.length), overHttp.length, 'Size2 on the first block');
    t.ok(blocks.slice(0, -1).every((b) => parseBlock2(b.option('Block2'))?.more === true));
    t.equal(parseBlock2(blocks.at(-1)!.option('Block2'))?.more, false, 'the last block says no more');
  });

  await t.test('every block size from 16 to 1024 is honoured', async (t) => {
    for (const size of [16, 32, 64, 128, 256, 512, 1024]) {
      const num = 5;
      const response = await s.client.request({ method: 'GET', path: deltaPath, block2: blockOption(num, size) });
      t.equal(response.code, '2.05');
      t.same(parseBlock2(response.option('Block2')), { num, more: true, size }, `block size ${size}`);
      t.ok(response.payload.equals(overHttp.subarray(num * size, (num + 1) * size)));
    }
  });

  await t.test('a transfer resumed from block N after a pause completes to the same bytes', async (t) => {
    const size = 256;
    const first = [];
    for (let num = 0; num < 10; num++) {
      first.push((await s.client.request({ method: 'GET', path: deltaPath, block2: blockOption(num, size) })).payload);
    }
    // The device goes quiet (a sleep cycle), then asks for block 10 directly: no server state is involved.
    await new Promise((r) => setTimeout(r, 1500));
    const rest = await s.client.download(deltaPath, size, 10);
    t.equal(parseBlock2(rest.blocks[0]!.option('Block2'))?.num, 10);
    const body = Buffer.concat([...first, rest.body]);
    t.equal(sha256Hex(body), manifest.delta_hash, 'resumed download hashes to delta_hash');
  });

  await t.test('a compressed binary downloads the same way', async (t) => {
    const full = await heartbeatUntilSigned(s.server.url, randomHash(), 'app');
    const { body } = await s.client.download(full.binary_endpoint!, 512);
    t.equal(sha256Hex(body), full.delta_hash);
  });

  await t.test('a GET without Block2 gets only a first block no larger than its own request', async (t) => {
    const request = requestDatagram({ method: 'GET', path: deltaPath });
    const response = await s.client.request({ method: 'GET', path: deltaPath });
    t.equal(response.code, '2.05');
    const block = parseBlock2(response.option('Block2'))!;
    t.equal(block.num, 0);
    t.equal(block.more, true);
    t.ok(block.size <= request.length, `block of ${block.size} bytes for a ${request.length}-byte request`);
    t.ok(response.raw.length < 2 * request.length, `response ${response.raw.length} bytes, request ${request.length}`);
    t.ok(response.payload.equals(overHttp.subarray(0, block.size)));
  });

  await t.test('a block past the end is 4.02; an unknown delta or binary is 4.04; a bad hash or Block2 is 4.00', async (t) => {
    const past = await s.client.request({ method: 'GET', path: deltaPath, block2: blockOption(Math.ceil(overHttp.length / 16) + 1, 16) });
    t.equal(past.code, '4.02');
    t.equal(past.payload.toString().split(':')[0], 'INVALID_RANGE');
    const unknownDelta = await s.client.request({ method: 'GET', path: `/delta/${randomHash()}/${v2.hash}`, block2: blockOption(0, 64) });
    t.equal(unknownDelta.code, '4.04');
    t.equal(unknownDelta.payload.toString().split(':')[0], 'DELTA_NOT_FOUND');
    const unknownBinary = await s.client.request({ method: 'GET', path: `/binary/${randomHash()}` });
    t.equal(unknownBinary.code, '4.04');
    const badHash = await s.client.request({ method: 'GET', path: `/binary/${'A'.repeat(64)}` });
    t.equal(badHash.code, '4.00');
    t.equal(badHash.payload.toString().split(':')[0], 'INVALID_HASH');
    const reservedSzx = await s.client.request({ method: 'GET', path: deltaPath, block2: Buffer.from([0x07]) });
    t.equal(reservedSzx.code, '4.00');
  });

  await t.test('unknown paths are 4.04, a wrong method is 4.05, /health stays HTTP only', async (t) => {
    t.equal((await s.client.request({ method: 'GET', path: '/health' })).code, '4.04');
    t.equal((await s.client.request({ method: 'GET', path: '/heartbeat' })).code, '4.05');
    t.equal((await s.client.request({ method: 'POST', path: deltaPath })).code, '4.05');
  });

  await t.test('a report is 2.04 and counted with the HTTP ones', async (t) => {
    const ok = await s.client.report({ device_id: 'device-0001', previous_hash: v1.hash, new_hash: v2.hash, success: true, timestamp: 1_700_000_000 });
    t.equal(ok.code, '2.04');
    t.equal(ok.payload.length, 0);
    const bad = await s.client.report({ device_id: 'device-0001', success: 'yes' });
    t.equal(bad.code, '4.00');
    const metrics = (await getBytes(`${s.server.url}/metrics`)).body.toString();
    t.match(metrics, /updater_update_reports_total\{result="success"\} 1/);
    t.match(metrics, /updater_transfer_bytes_total\{kind="delta",transport="coap"\} \d+/);
  });

  await t.test('the manifest fetched over CoAP points at this delta', async (t) => {
    const response = await s.client.heartbeat(v1.hash, 'app');
    t.equal(manifestOf(response).delta_endpoint, deltaPath);
  });
});
