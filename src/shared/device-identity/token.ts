import { hash, timingSafeEqual } from 'node:crypto';
import { UpdaterError } from '../errors.js';
import { bearerToken } from '../bearer.js';
import { ROW_LIMIT, TOKEN_TAIL, VerifiedTokens } from './verified-tokens.js';


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
// A check asks no one. A token not seen before costs its decoding, the MAC (TokenMac below)
// and, for a request that names a device, a SHA-256 of that id: about 1.7 µs alone. A token
// seen before costs a lookup in the front-end's memory of verified tokens (VerifiedTokens, off
// the JavaScript heap) and a comparison of the device id it was last matched with: the
// front-end remembers up to REMEMBERED_TOKENS, and verifies the tokens past them each time
// (until as many did as it remembers: then it starts again, verified-tokens.ts).

const PREFIX = 'd1.';
const BODY_BYTES = 24;
const MAC_BYTES = 16;
const TOKEN_BYTES = BODY_BYTES + MAC_BYTES;
const TOKEN_CHARS = PREFIX.length + Math.ceil((TOKEN_BYTES * 4) / 3);
const MAC_CONTEXT = Buffer.from('updater-device-token:v1');
if (TOKEN_CHARS - PREFIX.length !== TOKEN_TAIL) throw new Error('VerifiedTokens keeps tails of another length');
/** Tokens remembered as verified (0.75 × 2^18, 32 MiB); past this each further token is checked afresh every time (verified-tokens.ts). */
const REMEMBERED_TOKENS = 196_608;

/** The first 16 bytes of SHA-256 over the device id, hex: how tokens and revocations name a device. */
export function deviceIdHash(deviceId: string): string {
  // crypto.hash, one call without a Hash object: 0.3 µs against 2.3 for createHash here.
  return hash('sha256', deviceId, 'hex').slice(0, 32);
}

const SHA256_BLOCK = 64;
const SHA256_BYTES = 32;

/**
 * HMAC-SHA256 (RFC 2104) over MAC_CONTEXT and a token body, written out with two one-shot
 * crypto.hash calls over buffers prepared once per key: createHmac builds a KeyObject and an
 * Hmac object per call (3.3 µs here), this 0.8 µs. The result is the same bytes (test/shared/device-identity/token.test.ts checks it against
 * createHmac). Digests travel as latin1 ('binary') strings: asking crypto.hash for a Buffer costs 1.5 µs.
 */
class TokenMac {
  /** (key ⊕ ipad) | MAC_CONTEXT | body */
  private readonly inner: Buffer;
  /** (key ⊕ opad) | inner digest */
  private readonly outer = Buffer.alloc(SHA256_BLOCK + SHA256_BYTES);
  private readonly digest = Buffer.alloc(SHA256_BYTES);

  constructor(key: Uint8Array) {
    const block = Buffer.alloc(SHA256_BLOCK);
    (key.length > SHA256_BLOCK ? Buffer.from(hash('sha256', key, 'binary'), 'latin1') : Buffer.from(key)).copy(block);
    this.inner = Buffer.alloc(SHA256_BLOCK + MAC_CONTEXT.length + BODY_BYTES);
    for (let i = 0; i < SHA256_BLOCK; i++) {
      this.inner[i] = block[i]! ^ 0x36;
      this.outer[i] = block[i]! ^ 0x5c;
    }
    MAC_CONTEXT.copy(this.inner, SHA256_BLOCK);
  }

  /** The MAC of `body` (BODY_BYTES), truncated to MAC_BYTES; the Buffer is reused by the next call. */
  of(body: Uint8Array): Buffer {
    this.inner.set(body, SHA256_BLOCK + MAC_CONTEXT.length);
    this.outer.write(hash('sha256', this.inner, 'binary'), SHA256_BLOCK, 'latin1');
    this.digest.write(hash('sha256', this.outer, 'binary'), 0, 'latin1');
    return this.digest.subarray(0, MAC_BYTES);
  }
}

/** A token for the device, good from `issuedAt` for `ttlSeconds` (Unix seconds). */
export function mintDeviceToken(key: Uint8Array, deviceId: string, issuedAt: number, ttlSeconds: number): string {
  const bytes = Buffer.alloc(TOKEN_BYTES);
  bytes.writeUInt32BE(issuedAt, 0);
  bytes.writeUInt32BE(issuedAt + ttlSeconds, 4);
  Buffer.from(deviceIdHash(deviceId), 'hex').copy(bytes, 8);
  new TokenMac(key).of(bytes.subarray(0, BODY_BYTES)).copy(bytes, BODY_BYTES);
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

/**
 * What verify() answers for a valid token, for requireOwner(): the token's row in the checker's
 * memory and that memory's generation, so a pass kept across a change of the memory is refused
 * rather than read from a row that now holds another token.
 */
export type TokenPass = number;

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
  private mac: TokenMac | undefined;
  /** The token being decoded (one front-end thread checks one request at a time). */
  private readonly bytes = Buffer.alloc(TOKEN_BYTES);
  private revoked = new Map<string, number>();
  /** Changes with the revocations: a row's revocation answer holds for the epoch it was made in. */
  private revocationEpoch = 1;
  private certificatesRefused = new Set<string>();
  private readonly memory: VerifiedTokens;
  version = '';

  /** `remembered`: verified tokens kept (128 bytes a slot, slots a power of two up to 4/3 of it). */
  constructor(remembered = REMEMBERED_TOKENS) {
    this.memory = new VerifiedTokens(remembered);
  }

  update(trust: DeviceTrust): void {
    if (Buffer.compare(Buffer.from(trust.key), Buffer.from(this.key)) !== 0) {
      this.mac = new TokenMac(trust.key);
      this.memory.clear();
    }
    this.key = trust.key;
    this.revoked = new Map(trust.revoked.map(([hash, at]) => [hash, at]));
    this.revocationEpoch++;
    this.certificatesRefused = new Set(trust.certificatesRefused);
    this.version = trust.version;
  }

  /**
   * Throws TokenRefused unless `token` is one this server issued, not expired at `nowSeconds`
   * and not revoked; answers the pass requireOwner() takes. `nowSeconds` is passed in so the
   * caller reads the clock once.
   */
  verify(token: string | undefined, nowSeconds: number): TokenPass {
    if (!token) throw new TokenRefused('missing');
    return this.verifyAt(token, 0, nowSeconds);
  }

  /**
   * verify() for the token of an `Authorization` header, as bearerToken() reads it. A header of
   * exactly `Bearer <token>`, as devices send it, is read in place: comparing a token sliced
   * out of it costs a third more (a sliced string is read through its parent). A space or tab
   * inside such a header makes its token invalid rather than missing.
   */
  verifyBearer(header: string, nowSeconds: number): TokenPass {
    if (header.length === BEARER_SPACE.length + TOKEN_CHARS && header.startsWith(BEARER_SPACE)) return this.verifyAt(header, BEARER_SPACE.length, nowSeconds);
    return this.verify(bearerToken(header), nowSeconds);
  }

  /** verify() for the token from `start` to the end of `text`. */
  private verifyAt(text: string, start: number, nowSeconds: number): TokenPass {
    if (text.length - start !== TOKEN_CHARS || !text.startsWith(PREFIX, start) || !this.mac) throw new TokenRefused('invalid');
    const { memory } = this;
    const tail = start + PREFIX.length;
    let row = memory.find(text, tail);
    if (row < 0) row = this.decode(text, tail);
    if (memory.expiresAt(row) <= nowSeconds) throw new TokenRefused('expired');
    if (this.revoked.size > 0 && this.isRevoked(row)) throw new TokenRefused('revoked');
    return memory.generation * ROW_LIMIT + row;
  }

  /** Throws TokenRefused('mismatch') unless the token of `pass` (from verify) was issued to `deviceId`. */
  requireOwner(pass: TokenPass, deviceId: string): void {
    const { memory } = this;
    const row = pass % ROW_LIMIT;
    if ((pass - row) / ROW_LIMIT !== memory.generation) throw new TokenRefused('invalid', 'the device token was forgotten during the request; send it again');
    if (memory.ownerIs(row, deviceId)) return;
    if (!memory.idHashIs(row, hash('sha256', deviceId, 'binary'))) throw new TokenRefused('mismatch');
    memory.keepOwner(row, deviceId);
  }

  /** Whether the token of `row` was issued at or before its device's revocation. */
  private isRevoked(row: number): boolean {
    const { memory, revocationEpoch } = this;
    let revoked = memory.revokedAt(row, revocationEpoch);
    if (revoked === undefined) {
      const revokedAt = this.revoked.get(memory.idHashHex(row));
      revoked = revokedAt !== undefined && memory.issuedAt(row) <= revokedAt;
      memory.keepRevoked(row, revocationEpoch, revoked);
    }
    return revoked;
  }

  /** Checks a token of the right length and prefix not seen before (its tail at `tail` in `text`), and remembers it. */
  private decode(text: string, tail: number): number {
    const encoded = text.slice(tail);
    const bytes = this.bytes;
    // Node's decoder skips characters outside the alphabet and takes both alphabets' 62nd and
    // 63rd: only the canonical encoding of 40 bytes counts.
    if (bytes.write(encoded, 0, 'base64url') !== TOKEN_BYTES || bytes.toString('base64url') !== encoded) throw new TokenRefused('invalid');
    if (!timingSafeEqual(this.mac!.of(bytes.subarray(0, BODY_BYTES)), bytes.subarray(BODY_BYTES))) throw new TokenRefused('invalid');
    return this.memory.add(text, tail, bytes.readUInt32BE(0), bytes.readUInt32BE(4), bytes.subarray(8, BODY_BYTES));
  }

  /**
   * The check of a request whose TLS client certificate was verified against the device CA:
   * `certifiedId` is its subject CN. Throws TokenRefused unless that device may come in.
   */
  verifyCertified(certifiedId: string): void {
    if (this.certificatesRefused.has(deviceIdHash(certifiedId))) throw new TokenRefused('revoked', 'the device of this client certificate was rejected or deleted');
  }
}

/** How devices write the scheme (RFC 6750), the form TokenChecker.verifyBearer reads in place. */
const BEARER_SPACE = 'Bearer ';
