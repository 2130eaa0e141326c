import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { authMessage } from '../shared/device-identity/auth-request.js';

// A simulated device's identity (devices.auth on the server, docs/protocol.md "Device
// authentication"): an Ed25519 key, the auth requests it signs, and the token it holds. The
// canonical text is the shared one (src/shared/device-identity/auth-request.ts); the key and the signature are
// node:crypto's, a tenth of the cost of the pure-JS signer the agent uses, which matters for a
// harness that makes 10,000 of them at start.

/** The DER prefix of an Ed25519 SubjectPublicKeyInfo: the raw 32-byte key follows it. */
const SPKI_PREFIX_BYTES = 12;
/** Devices an operator may preauthorize in one call (docs/operations.md, "Enrolling devices"). */
export const PREAUTHORIZE_BATCH = 10_000;

export interface LoadIdentity {
  /** 64 lowercase hex. */
  readonly publicKey: string;
  readonly privateKey: KeyObject;
  /** The timestamp of the last auth request signed: the server refuses one that is not newer. */
  lastTimestamp: number;
  /** The token the server gave, while it is believed good (cleared on a 401 / 4.01). */
  token?: string;
}

export function newIdentity(): LoadIdentity {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX_BYTES);
  return { publicKey: raw.toString('hex'), privateKey, lastTimestamp: 0 };
}

/**
 * Keys made at a time by newIdentities before the event loop runs again. One key costs about
 * 0.28 ms here, so 100,000 made in one go held the loop for 28 s, longer than uWS keeps an idle
 * connection (10 s); the heartbeat bench's next request after such a pause failed with EPIPE
 * (the cause was not reproduced in a test: preauthorize's retry is what the test checks).
 */
const IDENTITIES_PER_TURN = 100;

/** `count` new identities, made a few at a time with the event loop let run between them. */
export async function newIdentities(count: number): Promise<LoadIdentity[]> {
  const identities: LoadIdentity[] = [];
  while (identities.length < count) {
    const end = Math.min(count, identities.length + IDENTITIES_PER_TURN);
    while (identities.length < end) identities.push(newIdentity());
    await nextTurn();
  }
  return identities;
}

/** The fields of a POST /auth body (JSON keys), timestamped newer than the identity's last request. */
export function signedAuthFields(identity: LoadIdentity, deviceId: string): Record<string, unknown> {
  const timestamp = identity.lastTimestamp = Math.max(Math.floor(Date.now() / 1000), identity.lastTimestamp + 1);
  const signature = sign(null, authMessage(deviceId, identity.publicKey, timestamp), identity.privateKey).toString('hex');
  return { device_id: deviceId, public_key: identity.publicKey, timestamp, signature };
}

/** Adds the devices' keys with `POST /admin/devices/preauthorize`, PREAUTHORIZE_BATCH a call. */
export async function preauthorize(baseUrl: string, adminToken: string, devices: readonly { id: string; identity: LoadIdentity }[]): Promise<void> {
  for (let start = 0; start < devices.length; start += PREAUTHORIZE_BATCH) {
    const batch = devices.slice(start, start + PREAUTHORIZE_BATCH).map((d) => ({ device_id: d.id, public_key: d.identity.publicKey }));
    const post = () => fetch(`${baseUrl}/admin/devices/preauthorize`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ devices: batch }),
    });
    // Sent again, once, when its connection failed under it (the heartbeat bench saw EPIPE on
    // a 1.5 MB batch): preauthorizing the same keys twice changes nothing the first did.
    const response = await post().catch((err: unknown) => {
      if (connectionFailed(err)) return post();
      throw err;
    });
    if (response.status !== 200) throw new Error(`POST /admin/devices/preauthorize answered ${response.status}: ${await response.text()} (is devices.auth on, and the token's role operate?)`);
  }
}

/** fetch's own failure: the request got no answer because its connection failed (reset, closed, refused). */
function connectionFailed(err: unknown): boolean {
  return err instanceof TypeError && err.message === 'fetch failed';
}
