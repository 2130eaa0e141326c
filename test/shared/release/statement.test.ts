import t from 'tap';
import { checkStatement, readStatement, signStatement, statementBytes, verifyStatement } from '../../../src/shared/release/statement.js';
import { publicKeyHex } from '../../../src/shared/signing.js';

// The release statement: its exact signed bytes (as docs/protocol.md shows them), and each
// check a device makes, each with the attack it stops.

const seed = new Uint8Array(32).fill(7);
const pub = publicKeyHex(seed);
const subject = { artifact: 'app/linux/arm64', target_hash: 'ab'.repeat(32), target_version: '1.5.0' };
const NOW = 1_790_000_000;

t.test('the signed string is the context and six fields joined by newlines, with no trailing newline', async (t) => {
  const text = new TextDecoder().decode(statementBytes(subject, 1_790_000_123, NOW, NOW + 86_400));
  t.equal(text, `updater-release:v1\napp/linux/arm64\n${'ab'.repeat(32)}\n1.5.0\n1790000123\n${NOW}\n${NOW + 86_400}`);
});

t.test('a statement signed with a known seed is the one docs/protocol.md shows', async (t) => {
  const statement = signStatement(seed, subject, 1_790_000_123, NOW, 86_400);
  t.same({ ...statement, signature: statement.signature.length }, { sequence: 1_790_000_123, issued_at: NOW, expires_at: NOW + 86_400, signature: 128 });
  // Ed25519 is deterministic: the same seed and message give the same signature every time.
  t.equal(signStatement(seed, subject, 1_790_000_123, NOW, 86_400).signature, statement.signature);
  t.ok(verifyStatement(pub, subject, statement));
});

t.test('a statement passes every check while it is fresh and not older than the running release', async (t) => {
  const statement = signStatement(seed, subject, 5, NOW, 100);
  t.equal(checkStatement(pub, subject, statement, { nowSeconds: NOW + 1, runningSequence: 5 }), undefined, 'equal sequence is accepted');
  t.equal(checkStatement(pub, subject, statement, { nowSeconds: NOW + 1, runningSequence: 0 }), undefined);
});

t.test('attack: a replayed older release (lower sequence) is refused as older', async (t) => {
  const old = signStatement(seed, subject, 4, NOW, 100);
  t.equal(checkStatement(pub, subject, old, { nowSeconds: NOW + 1, runningSequence: 5 }), 'older');
});

t.test('attack: a statement kept until it expired (a freeze) is refused as expired', async (t) => {
  const statement = signStatement(seed, subject, 5, NOW, 100);
  t.equal(checkStatement(pub, subject, statement, { nowSeconds: NOW + 100, runningSequence: 0 }), 'expired');
});

t.test('attack: any field changed after signing fails the signature', async (t) => {
  const statement = signStatement(seed, subject, 5, NOW, 100);
  const device = { nowSeconds: NOW + 1, runningSequence: 0 };
  t.equal(checkStatement(pub, subject, { ...statement, sequence: 6 }, device), 'signature', 'a raised sequence');
  t.equal(checkStatement(pub, subject, { ...statement, expires_at: NOW + 10_000 }, device), 'signature', 'a later expiry');
  t.equal(checkStatement(pub, { ...subject, target_hash: 'cd'.repeat(32) }, statement, device), 'signature', 'another target');
  t.equal(checkStatement(pub, { ...subject, artifact: 'other' }, statement, device), 'signature', 'another track');
  t.equal(checkStatement(pub, { ...subject, target_version: '9.9.9' }, statement, device), 'signature', 'another label');
  const other = publicKeyHex(new Uint8Array(32).fill(8));
  t.equal(checkStatement(other, subject, statement, device), 'signature', 'another key');
  const flipped = (statement.signature[0] === '0' ? '1' : '0') + statement.signature.slice(1);
  t.equal(checkStatement(pub, subject, { ...statement, signature: flipped }, device), 'signature', 'a flipped signature nibble');
});

t.test('a malformed statement is no statement', async (t) => {
  t.equal(readStatement(undefined), undefined);
  t.equal(readStatement({ sequence: -1, issued_at: 1, expires_at: 2, signature: 'a'.repeat(128) }), undefined);
  t.equal(readStatement({ sequence: 1, issued_at: 1, expires_at: 2, signature: 'A'.repeat(128) }), undefined);
  t.same(readStatement({ sequence: 1, issued_at: 1, expires_at: 2, signature: 'a'.repeat(128), extra: 1 }), { sequence: 1, issued_at: 1, expires_at: 2, signature: 'a'.repeat(128) });
});
