import t from 'tap';
import { certificateBytes, checkCertificate, readCertificate, signCertificate } from '../../../src/shared/release/certificate.js';
import { publicKeyHex } from '../../../src/shared/signing.js';

// The key certificate of a signing key: its signed bytes and the checks an agent makes before
// it follows a rotated key, each with the attack it stops.

const root = new Uint8Array(32).fill(1);
const rootPub = publicKeyHex(root);
const signingPub = publicKeyHex(new Uint8Array(32).fill(2));
const NOW = 1_790_000_000;
const fields = { public_key: signingPub, not_before: NOW, not_after: NOW + 365 * 86_400, serial: 2 };

t.test('the signed string is updater-key:v1 and four fields joined by newlines', async (t) => {
  t.equal(new TextDecoder().decode(certificateBytes(fields)), `updater-key:v1\n${signingPub}\n${NOW}\n${NOW + 365 * 86_400}\n2`);
});

t.test('a certificate signed by the root, valid now, of a serial not below the trusted one is accepted', async (t) => {
  const cert = signCertificate(root, fields);
  t.equal(checkCertificate(rootPub, cert, { nowSeconds: NOW + 1, highestSerial: 2 }), undefined);
  t.same(readCertificate(JSON.parse(JSON.stringify(cert))), cert, 'its JSON reads back');
});

t.test('attack: an old certificate (a lower serial, e.g. of a leaked retired key) is refused', async (t) => {
  const cert = signCertificate(root, { ...fields, serial: 1 });
  t.equal(checkCertificate(rootPub, cert, { nowSeconds: NOW + 1, highestSerial: 2 }), 'lower-serial');
});

t.test('attack: a certificate not signed by the root, or changed after signing, is refused', async (t) => {
  const forged = signCertificate(new Uint8Array(32).fill(9), fields);
  t.equal(checkCertificate(rootPub, forged, { nowSeconds: NOW + 1, highestSerial: 0 }), 'signature');
  const cert = signCertificate(root, fields);
  t.equal(checkCertificate(rootPub, { ...cert, serial: 99 }, { nowSeconds: NOW + 1, highestSerial: 0 }), 'signature', 'a raised serial');
  t.equal(checkCertificate(rootPub, { ...cert, not_after: NOW + 999_999_999 }, { nowSeconds: NOW + 1, highestSerial: 0 }), 'signature', 'a longer life');
});

t.test('an expired or not-yet-valid certificate is refused', async (t) => {
  const cert = signCertificate(root, fields);
  t.equal(checkCertificate(rootPub, cert, { nowSeconds: NOW + 365 * 86_400, highestSerial: 0 }), 'expired');
  t.equal(checkCertificate(rootPub, cert, { nowSeconds: NOW - 1, highestSerial: 0 }), 'not-yet-valid');
});

t.test('a malformed certificate is named by its problem', async (t) => {
  t.match(readCertificate([]), /not a JSON object/);
  t.match(readCertificate({ ...fields, signature: 'x' }), /signature/);
  t.match(readCertificate({ ...fields, not_after: NOW - 1, signature: 'a'.repeat(128) }), /not_after/);
  t.match(readCertificate({ ...fields, signature: 'a'.repeat(128), extra: 1 }), /unknown field "extra"/);
});
