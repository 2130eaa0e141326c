import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { publicKeyHex, readPrivateKeyFile, signManifest, verifyManifest } from '../../src/shared/signing.js';
import { makeFixture, randomHash } from '../helpers/fixture.js';
import { runUpdater } from '../helpers/server.js';

t.test('updater keygen writes a 0600 key, prints its public key and never overwrites', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const out = join(fixture.dir, 'new.key');
  const result = await runUpdater(['keygen', '--out', out]);
  t.equal(result.code, 0);
  t.match(result.stdout, /^[0-9a-f]{64}\n$/, 'the public key is the only line on stdout');
  t.equal((await stat(out)).mode & 0o777, 0o600);
  const key = await readPrivateKeyFile(out);
  t.equal(publicKeyHex(key), result.stdout.trim());
  const target = randomHash();
  const transfer = randomHash();
  t.ok(verifyManifest(result.stdout.trim(), target, transfer, signManifest(key, target, transfer)), 'the server signs with that key');

  const again = await runUpdater(['keygen', '--out', out]);
  t.not(again.code, 0);
  t.match(again.stderr, /refusing to overwrite/);
  t.equal(publicKeyHex(await readPrivateKeyFile(out)), result.stdout.trim(), 'the existing key is untouched');
  const missing = await runUpdater(['keygen']);
  t.equal(missing.code, 2);
});
