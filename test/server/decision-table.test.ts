import { readFile } from 'node:fs/promises';
import t from 'tap';
import { verifyManifest } from '../../src/shared/signing.js';
import { firmware, makeFixture, nextVersion, randomHash } from '../helpers/fixture.js';
import { getBytes, heartbeat, heartbeatUntilSigned, metricValue } from '../helpers/http.js';
import { spawnServer, startTestServer, writeConfig, configDocument } from '../helpers/server.js';
import { freePort } from '../helpers/fixture.js';

// Spec 3.1, rows 1-7, each observed over real HTTP against the real supervisor.

t.test('decision table over HTTP', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(400_000, 'dt-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'dt-v2'));
  const server = await startTestServer(fixture, [
    { name: 'app', os: 'linux', arch: 'arm64', version: '2.0.0', binary: v2.path },
    { name: 'legacy', version: '1.0.0', binary: v1.path },
  ], { default_artifact: 'app/linux/arm64', allow_full_download: false });
  t.teardown(() => server.stop());

  t.test('row 1: an artifact that cannot be resolved is 404 with no manifest', async (t) => {
    const unknown = await heartbeat(server.url, v1.hash, 'nosuch/linux/arm64');
    t.equal(unknown.status, 404);
    t.equal(unknown.json.error.code, 'ARTIFACT_NOT_FOUND');
    t.notOk(unknown.json.update_available);
    const malformed = await heartbeat(server.url, v1.hash, 'app/linux');
    t.equal(malformed.status, 400, 'a half platform is a malformed key, not an unknown one');
    t.equal(malformed.json.error.code, 'INVALID_ARTIFACT_KEY');
    const dots = await heartbeat(server.url, v1.hash, '..');
    t.equal(dots.status, 400);
  });

  t.test('row 2: a device on the target is told there is no update', async (t) => {
    const { status, json } = await heartbeat(server.url, v2.hash, 'app/linux/arm64');
    t.equal(status, 200);
    t.equal(json.update_available, false);
    t.equal(json.target_hash, v2.hash);
    t.equal(json.target_version, '2.0.0');
    t.equal(json.artifact, 'app/linux/arm64');
    t.notOk(json.signature);
    t.notOk(json.retry_after);
  });

  t.test('row 4 then row 3: a new pair is generated asynchronously, then served as a signed delta', async (t) => {
    const first = await heartbeat(server.url, v1.hash, '');
    t.equal(first.status, 200);
    t.equal(first.json.update_available, true);
    t.ok(first.json.retry_after > 0, 'retry_after tells the device to come back');
    t.notOk(first.json.signature, 'a pending answer carries no signature');
    t.notOk(first.json.delta_endpoint);
    t.notOk(first.json.binary_endpoint);
    t.equal(first.json.artifact, 'app/linux/arm64', 'an empty artifact resolves to the default track');
    const pending = await getBytes(`${server.url}/delta/${v1.hash}/${v2.hash}`);
    t.equal(pending.status, 404, 'a delta still being generated is never served');

    const signed = await heartbeatUntilSigned(server.url, v1.hash);
    t.equal(signed.delta_endpoint, `/delta/${v1.hash}/${v2.hash}`);
    t.ok(verifyManifest(fixture.publicKey, signed.target_hash, signed.delta_hash, signed.signature!));
    const again = await heartbeat(server.url, v1.hash);
    t.same(again.json, signed, 'the signed manifest is served again from the cache, byte for byte');
  });

  t.test('row 7: an unknown binary without allow_full_download stays stranded', async (t) => {
    const { status, json } = await heartbeat(server.url, randomHash());
    t.equal(status, 200);
    t.equal(json.update_available, false);
    t.notOk(json.signature);
    t.notOk(json.binary_endpoint);
  });
});

t.test('row 5: the size cap forces full mode, logs a WARN naming the binary and counts mode="full"', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(1_600_000, 'r5-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'r5-v2'));
  const port = await freePort();
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [
    { name: 'app', version: '2', binary: v2.path },
    { name: 'legacy', version: '1', binary: v1.path },
  ], { default_artifact: 'app', store: { delta_max_source_mb: 1 }, log_level: 'info' }));
  const server = await spawnServer(configPath, `http://127.0.0.1:${port}`);
  t.teardown(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
  });
  const manifest = await heartbeatUntilSigned(server.url, v1.hash);
  t.equal(manifest.binary_endpoint, `/binary/${v2.hash}`, 'full mode, not a delta');
  t.notOk(manifest.delta_endpoint);
  t.ok(verifyManifest(fixture.publicKey, v2.hash, manifest.delta_hash, manifest.signature!));
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  t.ok(metricValue(metrics, 'updater_deltas_served_total', { mode: 'full' }) >= 1);
  t.equal(metricValue(metrics, 'updater_delta_generations_total', { kind: 'delta', result: 'ok' }), 0, 'no diff was attempted');
  const warn = server.output().split('\n').filter((l) => l.includes('"level":40')).map((l) => JSON.parse(l)).find((l) => l.binary === v1.hash);
  t.ok(warn, 'a WARN names the oversize binary');
  t.equal(warn?.size, v1.size, 'and its size');
});

// Row 6 and the stored-delta case share their first server (a start costs ~0.8 s of CPU): the
// row-6 device's binary is unknown, so full mode, while the delta is the legacy binary's.
t.test('no size cap, full downloads allowed', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(1_600_000, 'cap-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'cap-v2'));
  const artifacts = [{ name: 'app', version: '2', binary: v2.path }, { name: 'legacy', version: '1', binary: v1.path }];
  const uncapped = await startTestServer(fixture, artifacts, { default_artifact: 'app', allow_full_download: true, store: { delta_max_source_mb: 0 } });
  t.teardown(() => uncapped.stop());

  await t.test('row 6: an unknown binary with allow_full_download gets a signed full manifest', async (t) => {
    const manifest = await heartbeatUntilSigned(uncapped.url, randomHash());
    t.equal(manifest.binary_endpoint, `/binary/${v2.hash}`);
    t.notOk(manifest.delta_endpoint);
    t.ok(verifyManifest(fixture.publicKey, v2.hash, manifest.delta_hash, manifest.signature!));
    const metrics = await (await fetch(`${uncapped.url}/metrics`)).text();
    t.ok(metricValue(metrics, 'updater_deltas_served_total', { mode: 'full' }) >= 1, 'full mode is counted');
  });

  await t.test('an existing delta is served even when the size cap would forbid it', async (t) => {
    const generated = await heartbeatUntilSigned(uncapped.url, v1.hash);
    await uncapped.stop();

    const capped = await startTestServer(fixture, artifacts, { default_artifact: 'app', store: { delta_max_source_mb: 1 } });
    t.teardown(() => capped.stop());
    const { json } = await heartbeat(capped.url, v1.hash);
    t.equal(json.delta_endpoint, generated.delta_endpoint, 'the stored delta is still offered');
    t.equal(json.delta_hash, generated.delta_hash);
    t.ok(json.signature);
    t.notOk(json.binary_endpoint);
  });
});
