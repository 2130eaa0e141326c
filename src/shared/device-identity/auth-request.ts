import { publicKeyOf, signEd25519, verifyEd25519 } from '../ed25519.js';
import { UpdaterError } from '../errors.js';
import { deviceIdField } from '../wire/validate.js';

// The device auth request (POST /auth, docs/protocol.md): one signed statement "I, the holder of
// this key, am this device, now". The agent signs it, the front-ends verify it; the fleet actor
// then decides what the device's state allows. Its canonical bytes are UTF-8 text, the parts
// joined by one "\n", no trailing newline.

export const DEVICE_AUTH_CONTEXT = 'updater-device-auth:v1';
/** How far a request's timestamp may be from the server's clock, either way. */
export const AUTH_CLOCK_WINDOW_S = 300;

export interface AuthRequest {
  readonly deviceId: string;
  /** Ed25519 public key, 64 lowercase hex. */
  readonly publicKey: string;
  /** Unix seconds. */
  readonly timestamp: number;
  /** 128 lowercase hex. */
  readonly signature: string;
}

export function authMessage(deviceId: string, publicKey: string, timestamp: number): Uint8Array {
  return new TextEncoder().encode([DEVICE_AUTH_CONTEXT, deviceId, publicKey, String(timestamp)].join('\n'));
}

/** The request a device with this private key (32-byte seed) sends at `timestamp`. */
export function signAuthRequest(seed: Uint8Array, deviceId: string, timestamp: number): AuthRequest {
  const publicKey = Buffer.from(publicKeyOf(seed)).toString('hex');
  const signature = Buffer.from(signEd25519(authMessage(deviceId, publicKey, timestamp), seed)).toString('hex');
  return { deviceId, publicKey, timestamp, signature };
}

/**
 * Whether the signature is the key's over the request; never throws. POST /auth is the one
 * unauthenticated request that costs a signature check (OpenSSL's, ed25519.ts), so its price
 * bounds what an anonymous client can make the server spend.
 */
export function authSignatureValid(request: AuthRequest): boolean {
  return verifyEd25519(Buffer.from(request.signature, 'hex'), authMessage(request.deviceId, request.publicKey, request.timestamp), Buffer.from(request.publicKey, 'hex'));
}

/**
 * Checks a request's shape (400 INVALID_FIELD), then its signature and clock window (401
 * DEVICE_AUTH_FAILED). What it cannot check alone (replay, key binding, state) is the fleet's.
 */
export function verifyAuthRequest(fields: Record<string, unknown>, nowSeconds: number): AuthRequest {
  const deviceId = deviceIdField(fields.device_id);
  const publicKey = fields.public_key;
  if (typeof publicKey !== 'string' || !/^[0-9a-f]{64}$/.test(publicKey)) {
    throw new UpdaterError('INVALID_FIELD', 'public_key must be 64 lowercase hex characters (an Ed25519 public key)', { field: 'public_key' });
  }
  const raw = fields.timestamp;
  const timestamp = typeof raw === 'bigint' ? Number(raw) : raw;
  if (typeof timestamp !== 'number' || !Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new UpdaterError('INVALID_FIELD', 'timestamp must be a non-negative integer (Unix seconds)', { field: 'timestamp' });
  }
  const signature = fields.signature;
  if (typeof signature !== 'string' || !/^[0-9a-f]{128}$/.test(signature)) {
    throw new UpdaterError('INVALID_FIELD', 'signature must be 128 lowercase hex characters', { field: 'signature' });
  }
  const request: AuthRequest = { deviceId, publicKey, timestamp, signature };
  if (Math.abs(timestamp - nowSeconds) > AUTH_CLOCK_WINDOW_S) {
    throw new UpdaterError('DEVICE_AUTH_FAILED', `the timestamp is more than ${AUTH_CLOCK_WINDOW_S} s from the server's clock`, { reason: 'clock' });
  }
  if (!authSignatureValid(request)) throw new UpdaterError('DEVICE_AUTH_FAILED', 'the signature does not verify with public_key', { reason: 'signature' });
  return request;
}

/** What the fleet answers an auth request that was not refused. */
export type AuthOutcome =
  | { readonly state: 'accepted'; readonly token: string; readonly expiresIn: number }
  | { readonly state: 'pending'; readonly retryAfter: number };

