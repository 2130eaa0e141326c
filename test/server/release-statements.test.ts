import t from 'tap';
import { signCertificate } from '../../src/shared/release/certificate.js';
import { verifyStatement } from '../../src/shared/release/statement.js';
import { encodeManifest } from '../../src/shared/wire/cbor.js';
import type { ManifestWire } from '../../src/shared/wire/keys.js';
import { adminCall } from '../helpers/admin.js';
import { manifestOf, startCoapTestServer } from '../helpers/coap.js';
import { firmware, makeFixture, nextVersion, randomHash } from '../helpers/fixture.js';
import { heartbeat, heartbeatUntilSigned, metricValue } from '../helpers/http.js';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

// Every heartbeat answer, over HTTP and CoAP, actionable or not, carries a release statement
// for the target it names; the sequence rises with a publish of new bytes and survives a
// restart (the state file); `GET /keys` serves the certificate; nothing is signed on the
// heartbeat path.

const fixture = await makeFixture();
t.teardown(() => fixture.cleanup());
const v1 = await fixture.writeBinary('v1.bin', firmware(60_000, 'r1'));
const v2 = await fixture.writeBinary('v2.bin', nextVersion(firmware(60_000, 'r1'), 'r2'));
const rootSeed = new Uint8Array(32).fill(3);
const certPath = join(fixture.dir, 'signing.cert.json');
const now = Math.floor(Date.now() / 1000);
const certificate = signCertificate(rootSeed, { public_key: fixture.publicKey, not_before: now, not_after: now + 10 * 86_400, serial: 7 });
await writeFile(certPath, JSON.stringify(certificate));

const overrides = {
  allow_full_download: true,
  store: { state_file: join(fixture.dir, 'state.json') },
  signing: { private_key_file: fixture.keyPath, certificate_file: certPath },
};
// An API track: publishes onto a configured one are refused (TRACK_CONFIGURED), and the state file keeps it.
let world = await startCoapTestServer(fixture, [], overrides);
t.teardown(() => world.stop());
if ((await adminCall(world.server.url, 'POST', '/admin/artifacts', { name: 'app', version: '1.0.0', binary: v1.path })).status !== 200) throw new Error('cannot publish app');

const verifies = (m: any) => verifyStatement(fixture.publicKey, { artifact: m.artifact, target_hash: m.target_hash, target_version: m.target_version }, m.release);

t.test('an up-to-date answer and an actionable one both carry a statement that verifies, on both transports', async (t) => {
  const upToDate = await heartbeat(world.server.url, v1.hash, 'app');
  t.equal(upToDate.json.update_available, false);
  t.ok(verifies(upToDate.json), 'HTTP, up to date');
  const stranger = await heartbeatUntilSigned(world.server.url, randomHash(), 'app');
  t.ok(verifies(stranger), 'HTTP, full mode');
  t.equal(stranger.release!.sequence, upToDate.json.release.sequence, 'one target, one sequence');
  const coap = manifestOf(await world.client.heartbeat(v1.hash, 'app')) as any;
  t.ok(verifies(coap), 'CoAP: the statement decodes to the same fields and verifies');
  t.equal(coap.release.sequence, upToDate.json.release.sequence);
  t.ok(upToDate.json.release.expires_at - upToDate.json.release.issued_at === 86_400, 'signing.release_ttl defaults to 24h');
});

t.test('the CoAP answer grows by at most 90 bytes', async (t) => {
  const response = await world.client.heartbeat(randomHash(), 'app');
  const manifest = manifestOf(response) as unknown as ManifestWire;
  const without = { ...manifest };
  delete without.release;
  const growth = response.payload.length - encodeManifest(without).length;
  t.comment(`CoAP answer: ${response.payload.length} bytes with the statement, ${growth} of them the statement`);
  t.ok(growth > 64 && growth <= 90, `the statement adds ${growth} bytes (the 64-byte signature included)`);
});

t.test('a publish of new bytes raises the sequence, an operator rollback raises it again, and a restart keeps it', async (t) => {
  const before = (await heartbeat(world.server.url, v1.hash, 'app')).json.release.sequence;
  t.equal((await adminCall(world.server.url, 'POST', '/admin/artifacts', { name: 'app', version: '2.0.0', binary: v2.path })).status, 200);
  const published = await heartbeat(world.server.url, v1.hash, 'app');
  t.ok(published.json.release.sequence > before, 'v2 is numbered above v1');
  t.ok(verifies(published.json));
  t.equal((await adminCall(world.server.url, 'POST', '/admin/artifacts', { name: 'app', version: '1.0.1', binary: v1.path })).status, 200);
  const rolledBack = await heartbeat(world.server.url, v2.hash, 'app');
  t.equal(rolledBack.json.target_hash, v1.hash);
  t.ok(rolledBack.json.release.sequence > published.json.release.sequence, 'older bytes published again: a higher sequence');
  await world.stop();
  world = await startCoapTestServer(fixture, [], overrides);
  const restarted = await heartbeat(world.server.url, v2.hash, 'app');
  t.equal(restarted.json.release.sequence, rolledBack.json.release.sequence, 'the state file kept the sequence across the restart');
  t.ok(verifies(restarted.json));
});

t.test('GET /keys serves the certificate over HTTP and CoAP', async (t) => {
  const http = await fetch(`${world.server.url}/keys`);
  t.equal(http.status, 200);
  t.same(await http.json(), certificate);
  const coap = await world.client.request({ method: 'GET', path: '/keys' });
  t.equal(coap.code, '2.05');
  const { decodeCertificate } = await import('../../src/shared/wire/cbor.js');
  t.same(decodeCertificate(coap.payload), certificate, 'CBOR keys 1-5, the signature as 64 bytes');
});

t.test('the certificate expiry is a metric, and no statement was ever signed on a heartbeat\'s path', async (t) => {
  const text = await (await fetch(`${world.server.url}/metrics`)).text();
  t.equal(metricValue(text, 'updater_signing_certificate_expiry_timestamp_seconds', { serial: '7' }), certificate.not_after);
  t.equal(metricValue(text, 'updater_release_statements_signed_total', { cause: 'heartbeat' }), 0);
  t.ok(metricValue(text, 'updater_release_statements_signed_total', { cause: 'change' }) >= 1);
});
