import { signEd25519, verifyEd25519 } from '../ed25519.js';
import { isSha256Hex } from '../hash.js';

// The release statement: what the manifest signature leaves out. The specification's signature
// covers the target hash and the transfer hash only, so a captured answer stays valid forever
// and can be replayed to put a device back on an older build, or to hide a newer one. The
// statement binds the target of an answer to its track, a sequence that only rises, and an
// expiry, signed by the same signing key:
//
//   "updater-release:v1\n" artifact "\n" target_hash "\n" target_version "\n"
//     sequence "\n" issued_at "\n" expires_at                 (UTF-8, no trailing newline)
//
// A device refuses a statement that does not verify, that has expired, or whose sequence is
// lower than the one of the release it runs (docs/protocol.md has the threat table).

export const RELEASE_CONTEXT = 'updater-release:v1';

/** The statement as it travels in JSON (`release`); CBOR carries the signature as 64 bytes. */
export interface ReleaseStatement {
  readonly sequence: number;
  readonly issued_at: number;
  readonly expires_at: number;
  /** 128 lowercase hex characters. */
  readonly signature: string;
}

/** The fields of the answer a statement is about: its track, target and the target's label. */
export interface ReleaseSubject {
  readonly artifact: string;
  readonly target_hash: string;
  readonly target_version: string;
}

export type ReleaseRefusal = 'signature' | 'expired' | 'older';

/** The exact bytes that are signed. */
export function statementBytes(subject: ReleaseSubject, sequence: number, issuedAt: number, expiresAt: number): Uint8Array {
  return new TextEncoder().encode([
    RELEASE_CONTEXT, subject.artifact, subject.target_hash, subject.target_version, String(sequence), String(issuedAt), String(expiresAt),
  ].join('\n'));
}

export function signStatement(privateKey: Uint8Array, subject: ReleaseSubject, sequence: number, issuedAt: number, ttlSeconds: number): ReleaseStatement {
  const expiresAt = issuedAt + ttlSeconds;
  const signature = Buffer.from(signEd25519(statementBytes(subject, sequence, issuedAt, expiresAt), privateKey)).toString('hex');
  return { sequence, issued_at: issuedAt, expires_at: expiresAt, signature };
}

export function verifyStatement(publicKeyHex: string, subject: ReleaseSubject, statement: ReleaseStatement): boolean {
  if (!/^[0-9a-f]{64}$/.test(publicKeyHex) || !/^[0-9a-f]{128}$/.test(statement.signature)) return false;
  return verifyEd25519(Buffer.from(statement.signature, 'hex'),
    statementBytes(subject, statement.sequence, statement.issued_at, statement.expires_at), Buffer.from(publicKeyHex, 'hex'));
}

/**
 * Every check a device makes, in order, before it downloads anything: the signature, the
 * expiry against its own clock, and the sequence against the one of the release it runs
 * (equal is accepted: the stable and the cohort target of one publish may share it).
 */
export function checkStatement(
  publicKeyHex: string, subject: ReleaseSubject, statement: ReleaseStatement, device: { nowSeconds: number; runningSequence: number },
): ReleaseRefusal | undefined {
  if (!verifyStatement(publicKeyHex, subject, statement)) return 'signature';
  if (statement.expires_at <= device.nowSeconds) return 'expired';
  if (statement.sequence < device.runningSequence) return 'older';
  return undefined;
}

const counter = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** The statement of a decoded answer, or undefined when its shape is wrong (a refusal too). */
export function readStatement(value: unknown): ReleaseStatement | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  if (!counter(v.sequence) || !counter(v.issued_at) || !counter(v.expires_at)) return undefined;
  if (typeof v.signature !== 'string' || !/^[0-9a-f]{128}$/.test(v.signature)) return undefined;
  return { sequence: v.sequence, issued_at: v.issued_at, expires_at: v.expires_at, signature: v.signature };
}

/** The subject of a decoded answer, or undefined when its fields are not what a statement names. */
export function readSubject(value: Record<string, unknown>): ReleaseSubject | undefined {
  const { artifact, target_hash: hash, target_version: version } = value;
  if (typeof artifact !== 'string' || typeof version !== 'string' || !isSha256Hex(hash)) return undefined;
  return { artifact, target_hash: hash, target_version: version };
}
