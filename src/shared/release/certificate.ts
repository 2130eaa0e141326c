import { readFile } from 'node:fs/promises';
import { signEd25519, verifyEd25519 } from '../ed25519.js';
import { UpdaterError } from '../errors.js';

// A key certificate: an offline root key vouches for a signing key, for a time, under a serial.
// With it the signing key can rotate without touching a device: an agent configured with the
// root's public key fetches `GET /keys` when a signature does not verify, and moves to the
// certified key of the highest serial it has seen that is valid now, never back to a lower one.
//
//   "updater-key:v1\n" public_key "\n" not_before "\n" not_after "\n" serial   (UTF-8, no trailing newline)

export const KEY_CONTEXT = 'updater-key:v1';

/** The certificate as `updater certify` writes it and `GET /keys` serves it over HTTP. */
export interface KeyCertificate {
  /** The certified signing key, 64 lowercase hex characters. */
  readonly public_key: string;
  readonly not_before: number;
  readonly not_after: number;
  readonly serial: number;
  /** By the root key, 128 lowercase hex characters. */
  readonly signature: string;
}

export type CertificateRefusal = 'signature' | 'not-yet-valid' | 'expired' | 'lower-serial';

export function certificateBytes(cert: Omit<KeyCertificate, 'signature'>): Uint8Array {
  return new TextEncoder().encode([KEY_CONTEXT, cert.public_key, String(cert.not_before), String(cert.not_after), String(cert.serial)].join('\n'));
}

export function signCertificate(rootKey: Uint8Array, fields: Omit<KeyCertificate, 'signature'>): KeyCertificate {
  return { ...fields, signature: Buffer.from(signEd25519(certificateBytes(fields), rootKey)).toString('hex') };
}

export function verifyCertificate(rootPublicKeyHex: string, cert: KeyCertificate): boolean {
  if (!/^[0-9a-f]{64}$/.test(rootPublicKeyHex)) return false;
  return verifyEd25519(Buffer.from(cert.signature, 'hex'), certificateBytes(cert), Buffer.from(rootPublicKeyHex, 'hex'));
}

/**
 * What a device checks before it trusts a certified key: the root's signature, the validity
 * window against its clock, and that the serial is not below the highest it trusted before.
 */
export function checkCertificate(rootPublicKeyHex: string, cert: KeyCertificate, device: { nowSeconds: number; highestSerial: number }): CertificateRefusal | undefined {
  if (!verifyCertificate(rootPublicKeyHex, cert)) return 'signature';
  if (cert.not_before > device.nowSeconds) return 'not-yet-valid';
  if (cert.not_after <= device.nowSeconds) return 'expired';
  if (cert.serial < device.highestSerial) return 'lower-serial';
  return undefined;
}

const counter = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** The shape check of a certificate from a file or the wire; the problem in words, or the certificate. */
export function readCertificate(value: unknown): KeyCertificate | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'is not a JSON object';
  const v = value as Record<string, unknown>;
  const known = new Set(['public_key', 'not_before', 'not_after', 'serial', 'signature']);
  const unknown = Object.keys(v).find((k) => !known.has(k));
  if (unknown !== undefined) return `has an unknown field ${JSON.stringify(unknown)}`;
  if (typeof v.public_key !== 'string' || !/^[0-9a-f]{64}$/.test(v.public_key)) return 'public_key must be 64 lowercase hex characters';
  if (!counter(v.not_before)) return 'not_before must be Unix seconds';
  if (!counter(v.not_after) || v.not_after <= v.not_before) return 'not_after must be Unix seconds after not_before';
  if (!counter(v.serial)) return 'serial must be a non-negative integer';
  if (typeof v.signature !== 'string' || !/^[0-9a-f]{128}$/.test(v.signature)) return 'signature must be 128 lowercase hex characters';
  return { public_key: v.public_key, not_before: v.not_before, not_after: v.not_after, serial: v.serial, signature: v.signature };
}

/** Reads `signing.certificate_file`; CONFIG_INVALID names the key and the problem. */
export async function readCertificateFile(path: string): Promise<KeyCertificate> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new UpdaterError('CONFIG_INVALID', `signing.certificate_file: cannot read ${path} as JSON: ${(err as Error).message}`);
  }
  const cert = readCertificate(doc);
  if (typeof cert === 'string') throw new UpdaterError('CONFIG_INVALID', `signing.certificate_file: ${path} ${cert} (write it with "updater certify")`);
  return cert;
}
