import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { encodeBlockOption } from '../../src/shared/wire/block2.js';
import { encodeHeartbeat, encodeManifest, encodeReport } from '../../src/shared/wire/cbor.js';
import { SignedManifests, FULL } from '../../src/actors/manifester/signer.js';
import type { Manifest } from '../../src/messages/manifester.js';
import { requestDatagram } from '../helpers/coap.js';
import { publicKeyHex, signedMessage } from '../../src/shared/signing.js';
import { authMessage, signAuthRequest } from '../../src/shared/device-identity/auth-request.js';
import { mintDeviceToken } from '../../src/shared/device-identity/token.js';
import { encodeAuthAnswer, encodeAuthRequest } from '../../src/shared/wire/cbor.js';
import { signStatement, statementBytes } from '../../src/shared/release/statement.js';
import { encodeCertificate } from '../../src/shared/wire/cbor.js';
import { signCertificate } from '../../src/shared/release/certificate.js';

// The example bytes of docs/protocol.md, produced by the server's own encoders and signer
// from fixed inputs. protocol-doc.test.ts checks that every value below appears in the doc;
// `node dist/test/docs/protocol-examples.js` prints them to paste after a change.

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export function protocolExamples(): Record<string, string> {
  const seed = new Uint8Array(Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex')); // RFC 8032 test 1
  const running = sha256('app 1.0.0');
  const target = sha256('app 1.1.0');
  const transfer = sha256('delta app 1.0.0 -> 1.1.0');
  const heartbeat = {
    device_id: 'dev-0001',
    version_hash: running,
    hw_info: { arch: 'arm64', os: 'linux', free_ram: 268435456, free_disk: 1073741824 },
    timestamp: 1767225600,
    version: '1.0.0',
    artifact: 'app/linux/arm64',
  };
  const unsigned: Manifest = {
    update_available: true,
    target_version: '1.1.0',
    target_hash: target,
    target_size: 1048576,
    delta_size: 5321,
    delta_hash: transfer,
    chunk_size: 65536,
    total_chunks: 1,
    artifact: 'app/linux/arm64',
    delta_endpoint: `/delta/${running}/${target}`,
  };
  const signer = new SignedManifests(seed, 1);
  const signed = signer.sign('app/linux/arm64', running, target, unsigned);
  // Over CoAP the chunk is a Block2 size: the server answers 1024 and the chunk count for it.
  const coapManifest: Manifest = { ...signed, chunk_size: 1024, total_chunks: Math.ceil(signed.delta_size / 1024) };
  const pending: Manifest = { ...unsigned, delta_size: 0, delta_hash: '', total_chunks: 0, retry_after: 30 };
  delete pending.delta_endpoint;
  const full = new SignedManifests(seed, 1).sign('app/linux/arm64', FULL, target, {
    ...unsigned, delta_endpoint: undefined, binary_endpoint: `/binary/${target}`, delta_size: 402112,
    delta_hash: sha256('app 1.1.0 compressed'), total_chunks: Math.ceil(402112 / 65536),
  } as Manifest);
  delete (full as Partial<Manifest>).delta_endpoint;
  // A release statement for the delta answer above, and the certificate of its key by a root.
  const subject = { artifact: 'app/linux/arm64', target_hash: target, target_version: '1.1.0' };
  const release = signStatement(seed, subject, 1767225000, 1767225600, 86_400);
  const released: Manifest = { ...coapManifest, release };
  const root = new Uint8Array(32).fill(0x42);
  const certificate = signCertificate(root, { public_key: publicKeyHex(seed), not_before: 1767225600, not_after: 1767225600 + 365 * 86_400, serial: 2 });
  const report = { device_id: 'dev-0001', previous_hash: running, new_hash: target, success: true, rollback_reason: '', timestamp: 1767225720 };
  return {
    public_key: publicKeyHex(seed),
    running_hash: running,
    target_hash: target,
    transfer_hash: transfer,
    signed_message: Buffer.from(signedMessage(target, transfer)).toString('hex'),
    signature: signed.signature!,
    heartbeat_json: JSON.stringify(heartbeat),
    manifest_json: JSON.stringify(signed),
    pending_json: JSON.stringify(pending),
    full_json: JSON.stringify(full),
    report_json: JSON.stringify(report),
    heartbeat_cbor: encodeHeartbeat(heartbeat).toString('hex'),
    manifest_cbor: encodeManifest(coapManifest).toString('hex'),
    heartbeat_datagram: requestDatagram({
      method: 'POST', path: '/heartbeat', contentFormat: 60, confirmable: true, messageId: 0x1234, token: Buffer.from('a1b2c3d4', 'hex'),
      payload: encodeHeartbeat(heartbeat),
    }).toString('hex'),
    block_datagram: requestDatagram({
      method: 'GET', path: `/delta/${running}/${target}`, block2: encodeBlockOption(5, false, 1024), confirmable: true,
      messageId: 0x1235, token: Buffer.from('a1b2c3d5', 'hex'),
    }).toString('hex'),
    report_cbor: encodeReport(report).toString('hex'),
    block2_ask_0_1024: encodeBlockOption(0, false, 1024).toString('hex'),
    block2_answer_0_more_1024: encodeBlockOption(0, true, 1024).toString('hex'),
    block2_ask_5_1024: encodeBlockOption(5, false, 1024).toString('hex'),
    block2_ask_300_512: encodeBlockOption(300, false, 512).toString('hex'),
    ...authExamples(),
    release_signed_string_hex: Buffer.from(statementBytes(subject, release.sequence, release.issued_at, release.expires_at)).toString('hex'),
    release_json: JSON.stringify(release),
    released_manifest_cbor: encodeManifest(released).toString('hex'),
    root_public_key: publicKeyHex(root),
    certificate_json: JSON.stringify(certificate),
    certificate_cbor: encodeCertificate(certificate).toString('hex'),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const [name, value] of Object.entries(protocolExamples())) console.log(`${name}:\n${value}\n`);
}

/** POST /auth (docs/protocol.md, "Device authentication"): a device key (RFC 8032 test 2) and its request. */
function authExamples(): Record<string, string> {
  const seed = new Uint8Array(Buffer.from('4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb', 'hex'));
  const request = signAuthRequest(seed, 'dev-0001', 1767225600);
  const json = { device_id: request.deviceId, public_key: request.publicKey, timestamp: request.timestamp, signature: request.signature };
  const token = mintDeviceToken(new Uint8Array(32).fill(0x42), 'dev-0001', 1767225600, 86400);
  return {
    auth_device_key: request.publicKey,
    auth_signed_text: JSON.stringify(new TextDecoder().decode(authMessage(request.deviceId, request.publicKey, request.timestamp))),
    auth_signature: request.signature,
    auth_json: JSON.stringify(json),
    auth_cbor: encodeAuthRequest(json).toString('hex'),
    auth_token_json: JSON.stringify({ token, expires_in: 86400 }),
    auth_token_cbor: encodeAuthAnswer({ token, expires_in: 86400 }).toString('hex'),
    auth_pending_json: JSON.stringify({ state: 'pending', retry_after: 60 }),
    auth_pending_cbor: encodeAuthAnswer({ state: 'pending', retry_after: 60 }).toString('hex'),
  };
}
