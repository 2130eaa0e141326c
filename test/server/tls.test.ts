import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import t from 'tap';
import { expectExit, logged, makeDevice } from '../helpers/agent.js';
import { adminCall } from '../helpers/admin.js';
import { ADMIN_TOKEN, firmware, freePort, makeFixture, nextVersion } from '../helpers/fixture.js';
import { heartbeat, heartbeatUntilSigned } from '../helpers/http.js';
import { configDocument, runUpdater, startTestServer, writeConfig } from '../helpers/server.js';
import { makeTestPki, type TestPki } from '../helpers/tls.js';
import { needs } from '../helpers/system-tools.js';

// HTTPS for devices, the admin API on a listener of its own, and the agent verifying the
// server's certificate. Certificates come from the openssl command line; the HTTPS client
// that must accept them is curl.

const run = promisify(execFile);

// One private CA and server certificate for the file, made on first use (after needs() let a
// test run): the tests only read them, and each making is four openssl runs.
let sharedPki: Promise<TestPki> | undefined;
const testPki = () => (sharedPki ??= makeFixture('updater-tls-pki-').then((fixture) => {
  t.teardown(() => fixture.cleanup());
  return makeTestPki(fixture.dir);
}));

t.test('HTTPS, a separate admin listener and a verifying agent', needs('openssl', 'curl'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const pki = await testPki();
  const v1Bytes = firmware(300_000, 'tls-1');
  const v2Bytes = nextVersion(v1Bytes, 'tls-2');
  const v1 = await fixture.writeBinary('v1.bin', v1Bytes);
  const v2 = await fixture.writeBinary('v2.bin', v2Bytes);
  const [httpsPort, adminPort] = [await freePort(), await freePort()];
  const server = await startTestServer(fixture, [
    { name: 'app', version: '2.0.0', binary: v2.path },
    { name: 'legacy', version: '1.0.0', binary: v1.path },
  ], {
    default_artifact: 'app',
    listen: { https: `127.0.0.1:${httpsPort}`, admin: `127.0.0.1:${adminPort}` },
    tls: { cert_file: pki.serverCert, key_file: pki.serverKey },
  });
  t.teardown(() => server.stop());
  const httpsUrl = `https://127.0.0.1:${httpsPort}`;
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  await heartbeatUntilSigned(server.url, v1.hash, 'app');
  // The agent asks for bsdiff-lzma first by default: that delta is made ready too.
  await heartbeatUntilSigned(server.url, v1.hash, 'app', 60_000, undefined, ['bsdiff-lzma']);

  t.test('curl --cacert gets a signed manifest over HTTPS; without the CA it refuses the server', async (t) => {
    const body = JSON.stringify({ device_id: 'curl-1', version_hash: v1.hash, artifact: 'app', timestamp: Math.floor(Date.now() / 1000), version: '1.0.0',
      hw_info: { arch: 'amd64', os: 'linux', free_ram: 1 << 28, free_disk: 1 << 30 } });
    const curl = (extra: string[]) => run('curl', ['-sS', '--max-time', '20', '-H', 'content-type: application/json', '-d', body, ...extra, `${httpsUrl}/heartbeat`]);
    const { stdout } = await curl(['--cacert', pki.caCert]);
    const manifest = JSON.parse(stdout);
    t.equal(manifest.update_available, true);
    t.equal(manifest.target_hash, v2.hash, 'the same track as over plain HTTP');
    t.match(manifest.signature, /^[0-9a-f]{128}$/, 'signed');
    const refused = await curl([]).then(() => undefined, (err: { code: number }) => err.code);
    t.equal(refused, 60, 'curl without the CA: exit 60, certificate not trusted');
    const wrongCa = await curl(['--cacert', pki.otherCaCert]).then(() => undefined, (err: { code: number }) => err.code);
    t.equal(wrongCa, 60, 'curl trusting another CA: exit 60');
  });

  t.test('the admin API answers on listen.admin only', async (t) => {
    const onAdmin = await adminCall(adminUrl, 'GET', '/admin/artifacts');
    t.equal(onAdmin.status, 200, 'admin listener: 200');
    t.equal(onAdmin.json.default, 'app', 'tracks listed');
    const onHttp = await adminCall(server.url, 'GET', '/admin/artifacts');
    t.equal(onHttp.status, 404, 'plain HTTP device listener: 404 even with the right token');
    t.equal(onHttp.json.error.code, 'NOT_FOUND');
    const { stdout } = await run('curl', ['-sS', '--max-time', '20', '--cacert', pki.caCert, '-o', '/dev/null', '-w', '%{http_code}',
      '-H', `authorization: Bearer ${ADMIN_TOKEN}`, `${httpsUrl}/admin/artifacts`]);
    t.equal(stdout, '404', 'HTTPS device listener: 404 even with the right token');
    const device = await adminCall(adminUrl, 'POST', '/heartbeat', { device_id: 'x' });
    t.equal(device.status, 404, 'and the admin listener serves no device route');
    t.equal((await heartbeat(server.url, v1.hash, 'app')).status, 200, 'plain HTTP still serves devices');
  });

  t.test('the agent updates over HTTPS with ca_file, and refuses a server its CA did not sign', async (t) => {
    const trusting = await makeDevice(fixture, httpsUrl, v1Bytes, { ca_file: pki.caCert });
    const ok = await trusting.runOnce();
    expectExit(t, ok);
    t.ok(logged(ok, 'new slot activated; restarting'), 'updated over HTTPS');
    t.equal((await trusting.current()).hash, v2.hash, 'running v2');

    const wrongCa = await makeDevice(fixture, httpsUrl, v1Bytes, { ca_file: pki.otherCaCert });
    const refused = await wrongCa.runOnce();
    t.not(refused.code, 0, 'another CA: the cycle fails');
    t.match(refused.output, /AGENT_TRANSPORT_FAILED/, 'as a transport failure');
    t.match(refused.output, /certificate/i, 'naming the certificate');
    t.equal((await wrongCa.current()).hash, v1.hash, 'still on v1');

    const noCa = await makeDevice(fixture, httpsUrl, v1Bytes);
    const untrusted = await noCa.runOnce();
    t.not(untrusted.code, 0, 'no ca_file (built-in roots only): the private CA is not trusted');
    t.match(untrusted.output, /AGENT_TRANSPORT_FAILED/, 'as a transport failure');
    t.equal((await noCa.current()).hash, v1.hash, 'still on v1');
  });
});

t.test('a taken port for any listener stops the start with a non-zero exit', needs('openssl'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const pki = await testPki();
  const bin = await fixture.writeBinary('app.bin', firmware(10_000, 'tls-port'));
  const blocker = createServer();
  blocker.listen(0, '127.0.0.1');
  await once(blocker, 'listening');
  t.teardown(() => blocker.close());
  const taken = (blocker.address() as { port: number }).port;
  for (const listener of ['http', 'https', 'admin'] as const) {
    const listen: Record<string, string> = { http: `127.0.0.1:${await freePort()}`, https: `127.0.0.1:${await freePort()}`, admin: `127.0.0.1:${await freePort()}` };
    listen[listener] = `127.0.0.1:${taken}`;
    const doc = configDocument(fixture, 0, [{ name: 'app', version: '1', binary: bin.path }],
      { listen, tls: { cert_file: pki.serverCert, key_file: pki.serverKey } });
    const path = await writeConfig(fixture, doc, `taken-${listener}.yaml`);
    const result = await runUpdater(['serve', '--config', path], 60_000);
    t.not(result.code, 0, `listen.${listener} on a taken port: non-zero exit (${result.code})`);
    t.not(result.code, null, 'and it exits by itself');
    t.match(result.stdout + result.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${taken} for listen\\.${listener}`), 'naming the listener');
    t.notMatch(result.stdout, /"server started"/, 'never claiming to have started');
  }
});

t.test('without listen.admin the admin API is served on the HTTPS listener too', needs('openssl', 'curl'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const pki = await testPki();
  const bin = await fixture.writeBinary('app.bin', firmware(10_000, 'tls-admin'));
  const httpsPort = await freePort();
  const server = await startTestServer(fixture, [{ name: 'app', version: '1', binary: bin.path }],
    { listen: { https: `127.0.0.1:${httpsPort}` }, tls: { cert_file: pki.serverCert, key_file: pki.serverKey } });
  t.teardown(() => server.stop());
  const curl = (token: string) => run('curl', ['-sS', '--max-time', '20', '--cacert', pki.caCert, '-o', '/dev/null', '-w', '%{http_code}',
    '-H', `authorization: Bearer ${token}`, `https://127.0.0.1:${httpsPort}/admin/artifacts`]);
  t.equal((await curl(ADMIN_TOKEN)).stdout, '200', 'the token travels encrypted and is accepted');
  t.equal((await curl('wrong-token-0123456789abcdefghijklmnop')).stdout, '401', 'a wrong token is refused');
});
