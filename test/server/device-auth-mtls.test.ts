import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { storeLayout, transferName } from '../../src/shared/store-layout.js';
import { adminCall, eventually } from '../helpers/admin.js';
import { heartbeatBody, heartbeatHttp, reportBody, TestDevice, tokenHttp } from '../helpers/device-auth.js';
import { firmware, freePort, makeFixture } from '../helpers/fixture.js';
import { postJson } from '../helpers/http.js';
import { configDocument, spawnServer, writeConfig } from '../helpers/server.js';
import { ageRows } from '../helpers/age-rows.js';
import { needs } from '../helpers/system-tools.js';
import { httpsRequest, makeClientCertificate, makeTestPki, type ClientCertificate } from '../helpers/tls.js';

// Device certificates (tls.client_ca_file) over real sockets: the server process, certificates
// from the openssl command line, and devices and attackers played with node:https and node:http.
// Each refusal is a check of the server (docs/operations.md "Device certificates"); each test
// also shows a request that the check lets through, so a refusal for another reason fails it.

t.setTimeout(300_000);

const FORGED = { 'x-updater-certified-device': 'cert-1', 'x-updater-forward-secret': 'ab'.repeat(32) };

t.test('device certificates stand in for the token on listen.https', needs('openssl'), async (t) => {
  const fixture = await makeFixture('updater-mtls-');
  t.teardown(() => fixture.cleanup());
  const pki = await makeTestPki(fixture.dir);
  const bytes = firmware(200_000, 'mtls-v1');
  const v1 = await fixture.writeBinary('v1.bin', bytes);
  const [port, httpsPort] = [await freePort(), await freePort()];
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [{ name: 'app', version: '1.0.0', binary: v1.path }], {
    log_level: 'info',
    listen: { https: `127.0.0.1:${httpsPort}` },
    tls: { cert_file: pki.serverCert, key_file: pki.serverKey, client_ca_file: pki.caCert },
    devices: { auth: 'on', enrollment: 'manual' },
    fleet: { flush_interval: '100ms' },
  }));
  const url = `http://127.0.0.1:${port}`;
  const server = await spawnServer(configPath, url);
  t.teardown(async () => {
    server.child.kill('SIGKILL');
    await server.exited;
  });
  const httpsUrl = `https://127.0.0.1:${httpsPort}`;
  const [cert1, cert2, cert3, foreign] = await Promise.all([
    makeClientCertificate(pki, 'cert-1'), makeClientCertificate(pki, 'cert-2'), makeClientCertificate(pki, 'cert-3'), makeClientCertificate(pki, 'cert-1', 'other'),
  ]);
  const json = (body: unknown) => ({ 'content-type': 'application/json', body: JSON.stringify(body) });
  const post = (path: string, body: unknown, client?: ClientCertificate, headers: Record<string, string> = {}) => {
    const { body: text, ...type } = json(body);
    return httpsRequest(`${httpsUrl}${path}`, { method: 'POST', headers: { ...type, ...headers }, body: text, client, pki });
  };
  const errorCode = (answer: { body: Buffer }) => JSON.parse(answer.body.toString()).error?.code;

  await t.test('a device with a certificate of the CA heartbeats and reports with no token, and is recorded', async (t) => {
    const beat = await post('/heartbeat', heartbeatBody('cert-1', v1.hash), cert1);
    t.equal(beat.status, 200, beat.body.toString());
    t.equal(JSON.parse(beat.body.toString()).update_available, false);
    const report = await post('/report', reportBody('cert-1', v1.hash, v1.hash, true), cert1);
    t.equal(report.status, 204);
    const recorded = await eventually('cert-1 and its report in the inventory', () => adminCall(url, 'GET', '/admin/devices/cert-1'), (a) => a.status === 200 && a.json.reports.length > 0, 20_000);
    t.equal(recorded.json.version_hash, v1.hash);
    t.equal(recorded.json.transport, 'http');
    t.equal(recorded.json.reports.length, 1, 'the report is recorded too');
  });

  await t.test('/binary with Range, HEAD and a full download go through the certificate front', async (t) => {
    // What /binary serves is the store's zstd file of the binary, made in the background after
    // the start: asked for until it is there, then read from the store to compare with.
    const full = await eventually('the full file is served', () => httpsRequest(`${httpsUrl}/binary/${v1.hash}`, { client: cert1, pki }), (a) => a.status === 200, 30_000);
    const served = await readFile(join(storeLayout(join(fixture.dir, 'store')).deltas, transferName('full', v1.hash)));
    t.ok(full.body.equals(served), 'the whole file');
    const partial = await httpsRequest(`${httpsUrl}/binary/${v1.hash}`, { headers: { range: 'bytes=1000-70999' }, client: cert1, pki });
    t.equal(partial.status, 206);
    t.equal(partial.headers['content-range'], `bytes 1000-70999/${served.length}`);
    t.ok(partial.body.equals(served.subarray(1000, 71_000)), 'the exact bytes of the range');
    const head = await httpsRequest(`${httpsUrl}/binary/${v1.hash}`, { method: 'HEAD', client: cert1, pki });
    t.equal(head.status, 200);
    t.equal(head.headers['content-length'], String(served.length));
    t.equal(head.body.length, 0);
    const anonymous = await httpsRequest(`${httpsUrl}/binary/${v1.hash}`, { headers: { range: 'bytes=0-99' }, pki });
    t.equal(anonymous.status, 401, 'without a certificate or a token a download is refused');
  });

  await t.test('without a certificate the port keeps the token rules', async (t) => {
    const device = new TestDevice('token-1');
    t.equal((await adminCall(url, 'POST', '/admin/devices/preauthorize', { devices: [{ device_id: 'token-1', public_key: device.request().publicKey }] })).status, 200);
    const token = await tokenHttp(url, device);
    t.equal((await post('/heartbeat', heartbeatBody('token-1', v1.hash))).status, 401, 'no token: 401');
    t.equal((await post('/heartbeat', heartbeatBody('token-1', v1.hash), undefined, { authorization: `Bearer ${token}` })).status, 200, 'its token: 200');
    t.equal((await heartbeatHttp(url, token, 'token-1', v1.hash)).status, 200, 'and on the plain listener as before');
  });

  await t.test('a certificate of another CA is cut off before any answer', async (t) => {
    const attempt = await post('/heartbeat', heartbeatBody('cert-1', v1.hash), foreign).then((a) => `answered ${a.status}`, (err: Error) => `failed: ${err.message}`);
    t.match(attempt, /^failed: /, `no HTTP answer (${attempt})`);
    t.equal((await post('/heartbeat', heartbeatBody('cert-1', v1.hash), cert1)).status, 200, 'the CA\'s certificate for the same id is let in');
  });

  await t.test('a certificate speaks for its own device only: CN ≠ device_id is 403 DEVICE_MISMATCH', async (t) => {
    const beat = await post('/heartbeat', heartbeatBody('cert-1', v1.hash), cert2);
    t.equal(beat.status, 403);
    t.equal(errorCode(beat), 'DEVICE_MISMATCH');
    const report = await post('/report', reportBody('cert-1', v1.hash, v1.hash, false), cert2);
    t.equal(report.status, 403);
    t.equal(errorCode(report), 'DEVICE_MISMATCH');
    // Headers that would name another device are the forwarder's own: a client's are dropped.
    const claimed = await post('/heartbeat', heartbeatBody('cert-1', v1.hash), cert2, FORGED);
    t.equal(claimed.status, 403, 'cert-2 sending the identity header for cert-1 is still cert-2');
    t.equal((await post('/heartbeat', heartbeatBody('cert-2', v1.hash), cert2)).status, 200, 'cert-2 for itself: 200');
  });

  await t.test('the identity header is worth nothing from anyone but the certificate front', async (t) => {
    const plain = await postJson(`${url}/heartbeat`, heartbeatBody('cert-1', v1.hash), FORGED);
    t.equal(plain.status, 401, 'forged on the plain listener: 401');
    t.equal(plain.json.error.code, 'DEVICE_TOKEN_INVALID');
    // The loopback listener the front forwards to is reachable by any local process.
    const inner = server.output().split('\n').filter((l) => l.includes('"behind":"client certificates"')).map((l) => JSON.parse(l).port as number)[0];
    t.ok(inner, `the loopback listener's port was logged (${inner})`);
    const direct = await postJson(`http://127.0.0.1:${inner}/heartbeat`, heartbeatBody('cert-1', v1.hash), FORGED);
    t.equal(direct.status, 401, 'forged on the loopback listener with a wrong secret: 401');
    const noSecret = await postJson(`http://127.0.0.1:${inner}/heartbeat`, heartbeatBody('cert-1', v1.hash), { 'x-updater-certified-device': 'cert-1' });
    t.equal(noSecret.status, 401, 'without a secret: 401');
  });

  await t.test('a rejected device\'s certificate is refused like its tokens; accepted again, it is let in', async (t) => {
    t.equal((await adminCall(url, 'POST', '/admin/devices/cert-1/reject')).status, 200);
    const refused = await post('/heartbeat', heartbeatBody('cert-1', v1.hash), cert1);
    t.equal(refused.status, 401);
    t.equal(errorCode(refused), 'DEVICE_TOKEN_INVALID');
    t.equal((await httpsRequest(`${httpsUrl}/binary/${v1.hash}`, { headers: { range: 'bytes=0-99' }, client: cert1, pki })).status, 401, 'downloads too');
    t.equal((await post('/heartbeat', heartbeatBody('cert-2', v1.hash), cert2)).status, 200, 'another device\'s certificate still works');
    t.equal((await adminCall(url, 'POST', '/admin/devices/cert-1/accept')).status, 200);
    t.equal((await post('/heartbeat', heartbeatBody('cert-1', v1.hash), cert1)).status, 200, 'accepted again: 200');
  });

  await t.test('a certificate is rejected before its first request, and the rejection outlives a delete and token_ttl', async (t) => {
    const beat = (id: string, cert: ClientCertificate) => post('/heartbeat', heartbeatBody(id, v1.hash), cert).then((a) => a.status);
    const rejected = await adminCall(url, 'POST', '/admin/devices/cert-3/reject');
    t.equal(rejected.status, 200, 'cert-3 never came, and is rejected all the same');
    t.equal(await beat('cert-3', cert3), 401, 'its certificate is refused at once');
    t.equal((await adminCall(url, 'DELETE', '/admin/devices/cert-3')).status, 200);
    t.equal((await adminCall(url, 'DELETE', '/admin/devices/cert-2')).status, 200, 'cert-2, never rejected, is deleted too');
    t.equal(await beat('cert-2', cert2), 401, 'a deleted certificate is refused while tokens issued before the delete could live');
    // token_ttl (24h) passes for both revocations; the fleet reads them again every 2 s.
    const db = join(fixture.dir, 'store', 'updater.db');
    t.equal(await ageRows('sqlite', db, { table: 'device_revocations', column: 'revoked_at' }, ['cert-2', 'cert-3'], 86_400 + 1), 2);
    await eventually('cert-2 is let in again as a new device', () => beat('cert-2', cert2), (status) => status === 200, 15_000);
    t.equal(await beat('cert-3', cert3), 401, 'the rejected cert-3 stays out');
    t.equal((await adminCall(url, 'GET', '/admin/devices/cert-3')).json.auth_state, 'rejected');
    t.equal((await adminCall(url, 'POST', '/admin/devices/cert-3/accept')).status, 200);
    t.equal(await beat('cert-3', cert3), 200, 'until an operator accepts it');
  });
});
