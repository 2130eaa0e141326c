import { UpdaterError } from '../src/shared/errors.js';
import { checkCertificate, readCertificate, type KeyCertificate } from '../src/shared/release/certificate.js';
import type { AgentContext } from './context.js';
import { nowSeconds } from './context.js';

// Which key signs what this device installs. Configured with `public_key` only, that key, for
// ever. Configured with `root_public_key`, the certified key of the highest serial this device
// has trusted (kept in its state file), `public_key` until it has one, and `GET /keys` when a
// signature does not verify: a newly certified key of a higher serial is taken, a lower serial
// never (an attacker holding an old, leaked key and its old certificate cannot bring the device
// back to it). Once the device holds a certificate, `public_key` is never used again: when the
// held certificate is outside its validity by the device's clock (expired, or not yet valid on a
// clock that runs behind), no key is trusted until `GET /keys` serves a newer one that verifies.

/** The key to verify with now; undefined when none is trusted (only a root configured, or the held certificate not valid now). */
export function trustedKey(ctx: AgentContext): string | undefined {
  const cert = ctx.state.signingCertificate;
  if (!ctx.config.rootPublicKey || !cert) return ctx.config.publicKey;
  return cert.not_after > nowSeconds() && cert.not_before <= nowSeconds() ? cert.public_key : undefined;
}

/**
 * Fetches `GET /keys` and trusts the certificate it serves if the root signed it, it is valid
 * now and its serial is not below the highest trusted before. Returns the newly trusted key,
 * or undefined when there is nothing new to trust (the reason is logged).
 */
export async function followCertifiedKey(ctx: AgentContext): Promise<string | undefined> {
  const root = ctx.config.rootPublicKey;
  if (!root) return undefined;
  let body: unknown;
  try {
    body = await ctx.transports.run('keys', (t) => t.keys(ctx.config.requestTimeoutMs));
  } catch (err) {
    ctx.log.warn({ reason: (err as Error).message }, 'could not fetch GET /keys');
    return undefined;
  }
  const cert = readCertificate(body);
  if (typeof cert === 'string') {
    ctx.log.warn({ problem: cert }, 'GET /keys answered something that is not a key certificate');
    return undefined;
  }
  const held = ctx.state.signingCertificate;
  if (held && held.public_key === cert.public_key && held.serial === cert.serial) return undefined;
  const refusal = checkCertificate(root, cert, { nowSeconds: nowSeconds(), highestSerial: held ? held.serial + (held.public_key === cert.public_key ? 0 : 1) : 0 });
  if (refusal) {
    ctx.log.warn({ code: 'KEY_REFUSED', reason: refusal, serial: cert.serial, trusted_serial: held?.serial ?? null },
      `the certificate GET /keys serves is refused: ${refusalText(refusal, cert, held)}`);
    return undefined;
  }
  ctx.state.signingCertificate = cert;
  await ctx.store.save(ctx.state);
  ctx.log.info({ public_key: cert.public_key, serial: cert.serial, not_after: cert.not_after }, 'now trusting a newly certified signing key');
  return cert.public_key;
}

function refusalText(refusal: string, cert: KeyCertificate, held: KeyCertificate | undefined): string {
  switch (refusal) {
    case 'signature': return 'the root key did not sign it';
    case 'not-yet-valid': return `it is valid only from ${cert.not_before}`;
    case 'expired': return `it expired at ${cert.not_after}`;
    default: return `its serial ${cert.serial} is not above the serial ${held?.serial} trusted already`;
  }
}

/** No key to verify with: only a root configured and nothing certified yet, or the held certificate not valid now. */
export function noTrustedKey(ctx: AgentContext): UpdaterError {
  const held = ctx.state.signingCertificate;
  const why = held
    ? `the certificate of serial ${held.serial} is valid only from ${held.not_before} to ${held.not_after} (now ${nowSeconds()}) and GET /keys served no newer one the root key certified`
    : 'no signing key is trusted yet and GET /keys served none the root key certified';
  return new UpdaterError('RELEASE_REFUSED', `release refused (signature): ${why}`, { reason: 'signature' });
}
