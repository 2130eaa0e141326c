import { UpdaterError } from '../src/shared/errors.js';
import { checkStatement, readStatement, readSubject, type ReleaseRefusal } from '../src/shared/release/statement.js';
import { nowSeconds, type AgentContext } from './context.js';
import { followCertifiedKey, noTrustedKey, trustedKey } from './keys.js';

// The release statement of every answer is checked before the agent acts on it (and so before
// any download): it must verify with the trusted signing key, must not have expired by the
// device's clock, and its sequence must not be lower than the one of the release the device
// runs. A refusal changes nothing on the device: it is logged with the code RELEASE_REFUSED
// and ends the cycle with an error (`--once` exits non-zero).
//
//   answer ─▶ statement present? ─▶ signature (else GET /keys once, with a root key) ─▶ artifact
//          ─▶ expiry ─▶ sequence ≥ running ─▶ act on the answer

export interface CheckedRelease {
  /** The statement's sequence: recorded with the slot swap when the answer is installed. */
  readonly sequence: number;
  /** The key that verified it, which must also have signed the manifest. */
  readonly publicKey: string;
}

export async function checkRelease(ctx: AgentContext, answer: unknown, runningHash: string): Promise<CheckedRelease> {
  const body = typeof answer === 'object' && answer !== null ? answer as Record<string, unknown> : {};
  const statement = readStatement(body.release);
  const subject = readSubject(body);
  if (!statement || !subject) throw refused('signature', 'the answer carries no well-formed release statement');
  // A validly signed release of another track is refused (mix-and-match): the configured track,
  // or without one the track of the first statement this device verified.
  const track = ctx.config.artifact || ctx.state.track;
  if (track && subject.artifact !== track) {
    throw refused('signature', `the statement is for the track ${subject.artifact}, not ${track}`);
  }
  const device = { nowSeconds: nowSeconds(), runningSequence: ctx.state.releaseSequence };
  let key = trustedKey(ctx);
  let refusal: ReleaseRefusal | undefined = key ? checkStatement(key, subject, statement, device) : 'signature';
  if (refusal === 'signature') {
    // The signing key may have rotated: a key certified by the root, of a higher serial, is taken.
    const followed = await followCertifiedKey(ctx);
    if (followed) {
      key = followed;
      refusal = checkStatement(key, subject, statement, device);
    }
  }
  if (!key) throw noTrustedKey(ctx);
  if (refusal) throw refused(refusal, reasonText(refusal, statement, device.runningSequence));
  if (!track) {
    ctx.state.track = subject.artifact;
    await ctx.store.save(ctx.state);
    ctx.log.info({ artifact: subject.artifact }, 'this device now follows the track of its first verified release; a release of another track is refused');
  }
  if (subject.target_hash === runningHash && statement.sequence > ctx.state.releaseSequence) {
    // A verified statement for what the device runs raises its floor (an operator's republish of the same bytes).
    ctx.state.releaseSequence = statement.sequence;
    await ctx.store.save(ctx.state);
  }
  return { sequence: statement.sequence, publicKey: key };
}

function reasonText(refusal: ReleaseRefusal, statement: { sequence: number; expires_at: number }, running: number): string {
  switch (refusal) {
    case 'signature': return 'the statement does not verify with the trusted signing key';
    case 'expired': return `the statement expired at ${statement.expires_at} (now ${nowSeconds()})`;
    case 'older': return `the statement's sequence ${statement.sequence} is lower than ${running}, the release this device runs`;
  }
}

function refused(reason: ReleaseRefusal, detail: string): UpdaterError {
  return new UpdaterError('RELEASE_REFUSED', `release refused (${reason}): ${detail}; nothing was changed on the device`, { reason });
}
