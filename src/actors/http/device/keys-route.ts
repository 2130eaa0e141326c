import { UpdaterError } from '../../../shared/errors.js';
import type { ActorContext } from '../../runtime.js';
import { sendJson, type Exchange } from '../server/respond.js';

/**
 * `GET /keys`: the signing key's certificate as `updater certify` wrote it, for agents that
 * trust a root key and follow the signing key when it rotates; 404 when none is configured.
 * Rarely asked (only when a signature does not verify), so it asks the manifester each time.
 */
export function keysRoute(ctx: ActorContext): (ex: Exchange) => Promise<void> {
  return async (ex) => {
    const certificate = await ctx.call('manifester', (m) => m.signingCertificate());
    if (!certificate) throw new UpdaterError('NOT_FOUND', 'this server has no signing key certificate (signing.certificate_file)');
    sendJson(ex, 200, certificate);
  };
}
