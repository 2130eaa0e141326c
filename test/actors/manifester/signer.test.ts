import t from 'tap';
import { FULL, SignedManifests } from '../../../src/actors/manifester/signer.js';
import type { Manifest } from '../../../src/messages/manifester.js';
import { publicKeyHex, verifyManifest } from '../../../src/shared/signing.js';

const hash = (c: string) => c.repeat(64);
const manifest = (to: string, transfer: string): Manifest => ({
  update_available: true, target_version: '2', target_hash: hash(to), target_size: 10, delta_size: 5, delta_hash: hash(transfer),
  chunk_size: 1024, total_chunks: 1, artifact: 'app',
});

t.test('a signed manifest is cached and verifies with the public key', async (t) => {
  const key = new Uint8Array(32).fill(7);
  const signed = new SignedManifests(key, 10);
  const answer = signed.sign('app', hash('a'), hash('b'), manifest('b', 'd'));
  t.ok(verifyManifest(publicKeyHex(key), hash('b'), hash('d'), answer.signature!));
  t.equal(signed.get('app', hash('a'), hash('b')), answer, 'the second heartbeat costs no signature');
});

t.test('forgetting a transfer drops exactly the manifests that name it', async (t) => {
  const signed = new SignedManifests(new Uint8Array(32).fill(1), 10);
  signed.sign('app', hash('a'), hash('b'), manifest('b', 'd'));
  signed.sign('app', hash('c'), hash('b'), manifest('b', 'e'));
  signed.sign('app', FULL, hash('b'), manifest('b', 'f'));
  signed.sign('other', hash('a'), hash('b'), manifest('b', 'd'));
  signed.forgetTransfer(hash('a'), hash('b'));
  t.equal(signed.get('app', hash('a'), hash('b')), undefined);
  t.equal(signed.get('other', hash('a'), hash('b')), undefined, 'whatever track named it');
  t.ok(signed.get('app', hash('c'), hash('b')), 'another source of the same target stays');
  t.ok(signed.get('app', FULL, hash('b')), 'the full-mode answer stays');
  signed.forgetTransfer(undefined, hash('b'));
  t.equal(signed.get('app', FULL, hash('b')), undefined, 'a removed full file drops the full-mode answer');
});

t.test('forgetting a track drops its manifests only, even when another key starts alike', async (t) => {
  const signed = new SignedManifests(new Uint8Array(32).fill(2), 10);
  signed.sign('app', hash('a'), hash('b'), manifest('b', 'd'));
  signed.sign('app/linux/arm64', hash('a'), hash('b'), manifest('b', 'd'));
  signed.forgetArtifact('app');
  t.equal(signed.get('app', hash('a'), hash('b')), undefined);
  t.ok(signed.get('app/linux/arm64', hash('a'), hash('b')));
  t.equal(signed.size, 1);
});
