import type { Config } from '../../shared/config/types.js';
import { UpdaterError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { readCertificateFile, type KeyCertificate } from '../../shared/release/certificate.js';
import { publicKeyHex, readPrivateKeyFile } from '../../shared/signing.js';

// The signing key and, when configured, its certificate (`signing.certificate_file`), read once
// at start. The certificate must certify this very key: serving one for another key would send
// every agent that follows `GET /keys` to a key that signs nothing here.

/** A certificate ending within this many days is a WARN at start (and visible as a metric always). */
export const CERTIFICATE_WARN_DAYS = 30;

export interface SigningKey {
  readonly privateKey: Uint8Array;
  readonly publicKey: string;
  readonly certificate: KeyCertificate | undefined;
}

export async function loadSigningKey(config: Config, log: Logger, nowMs = Date.now()): Promise<SigningKey> {
  const privateKey = await readPrivateKeyFile(config.signing.privateKeyFile);
  const publicKey = publicKeyHex(privateKey);
  const path = config.signing.certificateFile;
  if (path === undefined) return { privateKey, publicKey, certificate: undefined };
  const certificate = await readCertificateFile(path);
  if (certificate.public_key !== publicKey) {
    throw new UpdaterError('CONFIG_INVALID',
      `signing.certificate_file: ${path} certifies the key ${certificate.public_key}, not this server's signing key ${publicKey} (signing.private_key_file)`);
  }
  const now = Math.floor(nowMs / 1000);
  const left = certificate.not_after - now;
  const fields = { serial: certificate.serial, not_after: new Date(certificate.not_after * 1000).toISOString(), path };
  if (left <= 0) {
    log.error(fields, 'the signing key\'s certificate has expired: agents that follow GET /keys refuse it; certify the key again (updater certify) and restart');
  } else if (left < CERTIFICATE_WARN_DAYS * 86_400) {
    log.warn({ ...fields, days_left: Math.floor(left / 86_400) }, `the signing key's certificate expires within ${CERTIFICATE_WARN_DAYS} days; certify a key again (docs/operations.md) before it does`);
  }
  return { privateKey, publicKey, certificate };
}
