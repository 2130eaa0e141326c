import t from 'tap';
import { verifyAuthRequest, signAuthRequest } from '../../../src/shared/device-identity/auth-request.js';
import { UpdaterError } from '../../../src/shared/errors.js';
import { deviceIdField, validateHeartbeat, validateReport } from '../../../src/shared/wire/validate.js';

// The one device-id rule (issue 36, item 7) holds at every door a device id enters by: the
// heartbeat, the report and POST /auth (JSON and CBOR decode to the same fields), each refusing
// with INVALID_FIELD on device_id; ids that merely contain dots or odd printable text pass.

const hash = 'ab'.repeat(32);
const heartbeat = (id: unknown) => ({ device_id: id, version_hash: hash, hw_info: { arch: 'arm64', os: 'linux', free_ram: 1, free_disk: 1 }, timestamp: 1, version: '1' });
const report = (id: unknown) => ({ device_id: id, previous_hash: hash, new_hash: hash, success: true, timestamp: 1 });
const auth = (id: string) => {
  const r = signAuthRequest(new Uint8Array(32).fill(3), id, 1_700_000_000);
  return { device_id: r.deviceId, public_key: r.publicKey, timestamp: r.timestamp, signature: r.signature };
};

/** The id as an assertion's name: a raw line separator would break the TAP stream. */
const shown = (id: string) => id.slice(0, 30).replace(/[^\x21-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

function refusal(fn: () => unknown): string {
  try {
    fn();
    return 'accepted';
  } catch (err) {
    return err instanceof UpdaterError ? `${err.code} ${String((err.details as { field?: string } | undefined)?.field)}` : String(err);
  }
}

t.test('".", ".." and control characters are refused as a device id wherever one enters', async (t) => {
  for (const id of ['.', '..', 'a\u0000b', 'x\ny', 'x\ry', 'tab\t', '\u001b[31m', 'del\u007f', 'c1\u0085', 'x\u2028', 'x\u2029', '', 'x'.repeat(129)]) {
    const name = shown(id);
    t.equal(refusal(() => deviceIdField(id)), 'INVALID_FIELD device_id', `the rule: ${name}`);
    t.equal(refusal(() => validateHeartbeat(heartbeat(id))), 'INVALID_FIELD device_id', `heartbeat: ${name}`);
    t.equal(refusal(() => validateReport(report(id))), 'INVALID_FIELD device_id', `report: ${name}`);
    t.equal(refusal(() => verifyAuthRequest(auth(id), 1_700_000_000)), 'INVALID_FIELD device_id', `auth: ${name}`);
  }
  for (const id of ['dev-0001', '...', '.hidden', 'a..b', 'a/b', 'Gerät 7', 'x'.repeat(128)]) {
    t.equal(refusal(() => validateHeartbeat(heartbeat(id))), 'accepted', `heartbeat takes ${shown(id)}`);
    t.equal(refusal(() => verifyAuthRequest(auth(id), 1_700_000_000)), 'accepted', `auth takes ${shown(id)}`);
  }
});
