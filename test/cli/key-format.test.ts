import { execFileSync, spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { publicKeyHex, readPrivateKeyFile, signedMessage, verifyManifest } from '../../src/shared/signing.js';
import { makeFixture, randomHash } from '../helpers/fixture.js';
import { runUpdater } from '../helpers/server.js';
import { needs } from '../helpers/system-tools.js';

// The signing key is PKCS#8 PEM, read by tools nobody here wrote; keys in the earlier format
// still load; `updater pubkey` prints the public key again.

/** The raw 32-byte public key as openssl derives it from a private key file. */
function opensslPublicKey(path: string): string {
  const der = execFileSync('openssl', ['pkey', '-in', path, '-pubout', '-outform', 'DER']);
  return der.subarray(der.length - 32).toString('hex');
}

t.test('keygen writes PKCS#8 PEM that openssl and Python cryptography read; pubkey prints its public key', needs('openssl', 'python3-cryptography'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const keyPath = join(fixture.dir, 'signing.pem');
  const keygen = await runUpdater(['keygen', '--out', keyPath]);
  t.equal(keygen.code, 0);
  const publicKey = keygen.stdout.trim();
  t.match(await readFile(keyPath, 'utf8'), /^-----BEGIN PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+-----END PRIVATE KEY-----\n$/);
  t.equal(spawnSync('openssl', ['pkey', '-in', keyPath, '-noout']).status, 0, 'openssl pkey reads it');
  t.equal(opensslPublicKey(keyPath), publicKey, 'openssl derives the same public key');

  const pubkey = await runUpdater(['pubkey', '--key', keyPath]);
  t.equal(pubkey.code, 0);
  t.equal(pubkey.stdout, `${publicKey}\n`, 'updater pubkey prints it again, alone on stdout');

  // Python signs the manifest message with the key file; the agent's check accepts it.
  const target = randomHash();
  const transfer = randomHash();
  const python = spawnSync('python3', ['-c', `
import sys
from cryptography.hazmat.primitives import serialization
key = serialization.load_pem_private_key(open(sys.argv[1], 'rb').read(), password=None)
raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
print(raw.hex())
print(key.sign(bytes.fromhex(sys.argv[2])).hex())
`, keyPath, Buffer.from(signedMessage(target, transfer)).toString('hex')], { encoding: 'utf8' });
  t.equal(python.status, 0, python.stderr);
  const [pythonPublic, pythonSignature] = python.stdout.trim().split('\n');
  t.equal(pythonPublic, publicKey, 'Python cryptography loads it and finds the same public key');
  t.ok(verifyManifest(publicKey, target, transfer, pythonSignature!), 'a signature made by Python verifies');
});

t.test('keys from openssl and keys in the earlier hex format load too; anything else is refused by name', needs('openssl'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const opensslKey = join(fixture.dir, 'openssl.pem');
  execFileSync('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', opensslKey]);
  t.equal((await runUpdater(['pubkey', '--key', opensslKey])).stdout.trim(), opensslPublicKey(opensslKey), 'an openssl-made key');

  const seed = 'a1'.repeat(32);
  const legacy = join(fixture.dir, 'legacy.key');
  await writeFile(legacy, `updater-ed25519-private-key\n${seed}\n`);
  t.same(Buffer.from(await readPrivateKeyFile(legacy)).toString('hex'), seed, 'the earlier format still loads');
  t.equal((await runUpdater(['pubkey', '--key', legacy])).stdout.trim(), publicKeyHex(Buffer.from(seed, 'hex')));

  const rsa = join(fixture.dir, 'rsa.pem');
  execFileSync('openssl', ['genpkey', '-algorithm', 'rsa', '-pkeyopt', 'rsa_keygen_bits:1024', '-out', rsa], { stdio: 'ignore' });
  const refused = await runUpdater(['pubkey', '--key', rsa]);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /rsa\.pem is not an unencrypted Ed25519 PKCS#8 PEM key/);
  t.equal((await runUpdater(['pubkey'])).code, 2, '--key is required');
});
