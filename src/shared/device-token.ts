import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { UpdaterError } from './errors.js';

// Device tokens (devices.auth: on). The fleet actor issues them; each front-end checks them on
// every device request without asking anyone: a token carries what it is good for, under a MAC
// with a key every replica reads from the database.
//
//   "d1." base64url( issued_at u32 | expires_at u32 | id_hash 16 bytes | mac 16 bytes )   57 characters
//
// id_hash is the first 16 bytes of SHA-256 over the device id (a device id may be 128
// characters; a token is at most 64), so a download request, which names no device, can still
// be refused for a revoked device, and a heartbeat for another device id is told apart from a
// forged token. mac = HMAC-SHA256(key, "updater-device-token:v1" | first 24 bytes)[0..16].
//
// A check that has seen a token before costs a Map lookup and a comparison of the device id
// (the cache below); only a token not seen before costs the HMAC and a SHA-256.

const PREFIX = 'd1.';
const BODY_BYTES = 24;
const MAC_BYTES = 16;
const TOKEN_BYTES = BODY_BYTES + MAC_BYTES;
const TOKEN_CHARS = PREFIX.length + Math.ceil((TOKEN_BYTES * 4) / 3);
const MAC_CONTEXT = Buffer.from('updater-device-token:v1');
/** Tokens remembered as verified; past this the memory starts again (each is checked afresh once). */
const CACHE_ENTRIES = 200_000;

/** The first 16 bytes of SHA-256 over the device id, hex: how tokens and revocations name a device. */
export function deviceIdHash(deviceId: string): string {
  return createHash('sha256').update(deviceId, 'utf8').digest().subarray(0, 16).toString('hex');
}

function mac(key: Uint8Array, body: Uint8Array): Buffer {
  return createHmac('sha256', key).update(MAC_CONTEXT).update(body).digest().subarray(0, MAC_BYTES);
}

/** A token for the device, good from `issuedAt` for `ttlSeconds` (Unix seconds). */
export function mintDeviceToken(key: Uint8Array, deviceId: string, issuedAt: number, ttlSeconds: number): string {
  const bytes = Buffer.alloc(TOKEN_BYTES);
  bytes.writeUInt32BE(issuedAt, 0);
  bytes.writeUInt32BE(issuedAt + ttlSeconds, 4);
  Buffer.from(deviceIdHash(deviceId), 'hex').copy(bytes, 8);
  mac(key, bytes.subarray(0, BODY_BYTES)).copy(bytes, BODY_BYTES);
  return PREFIX + bytes.toString('base64url');
}

/** What the front-ends need to check tokens, as the fleet actor sends it. */
export interface DeviceTrust {
  /** Changes whenever the key or the revocations do (the front-ends wait for a change). */
  readonly version: string;
  readonly key: Uint8Array;
  /** [id hash, revoked at]: tokens of that device issued at or before that second are refused. */
  readonly revoked: readonly (readonly [string, number])[];
  /**
   * Id hashes of devices whose client certificates (tls.client_ca_file) are refused: rejected
   * ones for as long as they stay rejected, deleted ones while their revocation lasts. A
   * certificate has no issue time of ours to compare with a revocation, so this is a plain set.
   */
  readonly certificatesRefused: readonly string[];
}

export type TokenRefusal = 'missing' | 'invalid' | 'expired' | 'revoked' | 'mismatch';

interface Verified {
  readonly issuedAt: number;
  readonly expiresAt: number;
  readonly idHash: string;
  /** The device id last matched against idHash (most tokens only ever meet their own device). */
  deviceId: string | undefined;
}

/** A refused token, with the reason the metrics count it under. */
export class TokenRefused extends UpdaterError {
  constructor(readonly reason: TokenRefusal, message = MESSAGES[reason]) {
    super(reason === 'mismatch' ? 'DEVICE_MISMATCH' : 'DEVICE_TOKEN_INVALID', message);
  }
}

const MESSAGES: Record<TokenRefusal, string> = {
  missing: 'a device token is required (POST /auth)',
  invalid: 'the device token is not one this server issued',
  expired: 'the device token has expired; authenticate again',
  revoked: 'the device token was revoked (the device was rejected or deleted)',
  mismatch: 'the request names another device than its token',
};

/** The check of each front-end: `trust` comes from the fleet actor and is replaced as it changes. */
export class TokenChecker {
  private key: Uint8Array = new Uint8Array(0);
  private revoked = new Map<string, number>();
  private certificatesRefused = new Set<string>();
  private cache = new Map<string, Verified>();
  version = '';

  update(trust: DeviceTrust): void {
    if (Buffer.compare(Buffer.from(trust.key), Buffer.from(this.key)) !== 0) this.cache = new Map();
    this.key = trust.key;
    this.revoked = new Map(trust.revoked.map(([hash, at]) => [hash, at]));
    this.certificatesRefused = new Set(trust.certificatesRefused);
    this.version = trust.version;
  }

  /**
   * The check of a request whose TLS client certificate was verified against the device CA:
   * `certifiedId` is its subject CN. Throws TokenRefused unless the device may come in and,
   * when `deviceId` is given (heartbeat, report), is the certified one.
   */
  checkCertified(certifiedId: string, deviceId: string | undefined): void {
    if (this.certificatesRefused.has(deviceIdHash(certifiedId))) throw new TokenRefused('revoked', 'the device of this client certificate was rejected or deleted');
    if (deviceId !== undefined && deviceId !== certifiedId) throw new TokenRefused('mismatch', 'the request names another device than its client certificate');
  }

  get ready(): boolean {
    return this.key.length > 0;
  }

  /**
   * Throws TokenRefused unless `token` is valid now and, when `deviceId` is given (heartbeat,
   * report), belongs to that device. `nowSeconds` is passed in so the caller reads the clock once.
   */
  check(token: string | undefined, deviceId: string | undefined, nowSeconds: number): void {
    if (!token) throw new TokenRefused('missing');
    const verified = this.cache.get(token) ?? this.verify(token);
    if (verified.expiresAt <= nowSeconds) throw new TokenRefused('expired');
    const revokedAt = this.revoked.get(verified.idHash);
    if (revokedAt !== undefined && verified.issuedAt <= revokedAt) throw new TokenRefused('revoked');
    if (deviceId === undefined || deviceId === verified.deviceId) return;
    if (deviceIdHash(deviceId) !== verified.idHash) throw new TokenRefused('mismatch');
    verified.deviceId = deviceId;
  }

  private verify(token: string): Verified {
    if (token.length !== TOKEN_CHARS || !token.startsWith(PREFIX) || this.key.length === 0) throw new TokenRefused('invalid');
    const bytes = Buffer.from(token.slice(PREFIX.length), 'base64url');
    // Node's decoder skips characters outside the alphabet: only a canonical encoding counts.
    if (bytes.length !== TOKEN_BYTES || bytes.toString('base64url') !== token.slice(PREFIX.length)) throw new TokenRefused('invalid');
    if (!timingSafeEqual(mac(this.key, bytes.subarray(0, BODY_BYTES)), bytes.subarray(BODY_BYTES))) throw new TokenRefused('invalid');
    const verified: Verified = { issuedAt: bytes.readUInt32BE(0), expiresAt: bytes.readUInt32BE(4), idHash: bytes.subarray(8, BODY_BYTES).toString('hex'), deviceId: undefined };
    if (this.cache.size >= CACHE_ENTRIES) this.cache = new Map();
    this.cache.set(token, verified);
    return verified;
  }
}

/** The token of an `Authorization: Bearer <token>` header; undefined when absent or another scheme. */
export function bearerToken(header: string): string | undefined {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match ? match[1] : undefined;
}
