import t from 'tap';
import { firmware, makeFixture, randomHash } from '../helpers/fixture.js';
import { getBytes, metricValue, postJson } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';

// Outside input over HTTP: refused with a stable code, and the server keeps answering.

t.test('bad device input gets a clear error and the server keeps answering', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(20_000, 'input'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }]);
  t.teardown(() => server.stop());
  const hb = (body: unknown) => postJson(`${server.url}/heartbeat`, body);

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
  const badHw = await hb({ device_id: 'd', version_hash: v2.hash, hw_info: { free_ram: -1 } });
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

  const ok = await hb({ device_id: 'd', version_hash: v2.hash });
  t.equal(ok.status, 200, 'still answering after all of that');
});

t.test('reports are accepted with 204, validated and counted', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(20_000, 'report'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }]);
  t.teardown(() => server.stop());
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
