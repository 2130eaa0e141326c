import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { randomSeed } from '../../src/shared/ed25519.js';
import { signCertificate, type KeyCertificate } from '../../src/shared/release/certificate.js';
import { publicKeyHex } from '../../src/shared/signing.js';
import { expectExit, makeDevice, runUntilRunning, type Device } from '../helpers/agent.js';
import { firmware, freePort, makeFixture, nextVersion } from '../helpers/fixture.js';
import { heartbeatUntilSigned } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';

// The attack of issue 36, item 1: a device configured with a root key and the first signing key
// K1 has followed a rotation to K2 (serial 2). Once K2's certificate is outside its validity by
// the device's clock (expired, or not yet valid on a clock that runs behind), a server holding
// the retired K1 and its old certificate (serial 1) must still be refused: the device fetches
// `GET /keys` for a newer certificate and refuses until one verifies, never falling back to the
// configured `public_key` or a lower serial. Over HTTP and CoAP.

const fixture = await makeFixture();
t.teardown(() => fixture.cleanup());
const rootSeed = randomSeed();
const root = publicKeyHex(rootSeed);
const now = Math.floor(Date.now() / 1000);
const DAY = 86_400;
// K1 is the fixture's key, the one the attacker's server signs with, with its genuine serial-1 certificate.
const k1Cert = signCertificate(rootSeed, { public_key: fixture.publicKey, not_before: now - 400 * DAY, not_after: now + 365 * DAY, serial: 1 });
const k2 = publicKeyHex(randomSeed());
const held: Record<string, KeyCertificate> = {
  expired: signCertificate(rootSeed, { public_key: k2, not_before: now - 30 * DAY, not_after: now - DAY, serial: 2 }),
  'not yet valid': signCertificate(rootSeed, { public_key: k2, not_before: now + DAY, not_after: now + 365 * DAY, serial: 2 }),
};
const certPath = join(fixture.dir, 'signing-1.cert.json');
await writeFile(certPath, JSON.stringify(k1Cert));

const v1Bytes = firmware(200_000, 'retired-1');
const v2Bytes = nextVersion(v1Bytes, 'retired-2');
const v1 = await fixture.writeBinary('v1.bin', v1Bytes);
const v2 = await fixture.writeBinary('v2.bin', v2Bytes);
const coapPort = await freePort();
const server = await startTestServer(fixture, [{ name: 'app', version: '2.0.0', binary: v2.path }], {
  listen: { coap: `127.0.0.1:${coapPort}` },
  signing: { private_key_file: fixture.keyPath, certificate_file: certPath },
  allow_full_download: true,
});
t.teardown(() => server.stop());
await heartbeatUntilSigned(server.url, v1.hash, 'app', 60_000);

const transports: Record<string, Record<string, unknown>> = {
  http: {},
  coap: { primary: 'coap', coap_url: `coap://127.0.0.1:${coapPort}` },
};

/** A device with K1 configured beside the root, that has trusted `cert` (K2, serial 2) before. */
async function deviceHolding(cert: KeyCertificate | undefined, transport: Record<string, unknown>): Promise<Device> {
  const device = await makeDevice(fixture, server.url, v1Bytes, { public_key: fixture.publicKey, root_public_key: root, ...transport });
  if (cert) {
    const state = { cooldownUntil: 0, backoffUntil: 0, consecutiveFailures: 0, runningVersion: '', rolledBackTargets: [], unsentReports: [], releaseSequence: 0, signingCertificate: cert };
    await writeFile(join(device.slotDir, '.agent-state.json'), `${JSON.stringify(state)}\n`);
  }
  return device;
}

for (const [transport, overrides] of Object.entries(transports)) {
  for (const [how, cert] of Object.entries(held)) {
    t.test(`${transport}: with serial 2 ${how}, the retired key 1 and its serial-1 certificate are refused`, async (t) => {
      const device = await deviceHolding(cert, overrides);
      const run = await device.runOnce();
      t.not(run.code, 0, '--once exits non-zero');
      t.ok(run.lines.some((l) => l.code === 'KEY_REFUSED' && l.reason === 'lower-serial'), 'GET /keys was asked, and its serial-1 certificate refused');
      t.ok(run.lines.some((l) => l.code === 'RELEASE_REFUSED'), 'the answer is refused');
      t.equal((await device.current()).hash, v1.hash, 'still on v1: nothing installed');
      t.equal((await device.readState()).signingCertificate?.serial, 2, 'the device still holds serial 2');
    });
  }

  // The control: the same server and configuration update a device that never trusted a
  // certificate, so the refusals above come from the held serial and nothing else.
  t.test(`${transport}: a device that never trusted a certificate updates from the same server`, async (t) => {
    const device = await deviceHolding(undefined, overrides);
    await runUntilRunning(t, device, v2.hash, transport);
    t.equal((await device.readState()).signingCertificate?.serial, undefined, 'it trusts the configured key, no certificate yet');
    expectExit(t, await device.runOnce(), 0, 'a further cycle is clean');
  });
}
