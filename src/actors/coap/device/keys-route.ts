import type { IncomingMessage, OutgoingMessage } from 'coap';
import { UpdaterError } from '../../../shared/errors.js';
import { encodeCertificate } from '../../../shared/wire/cbor.js';
import type { ActorContext } from '../../runtime.js';
import { CONTENT_FORMAT_CBOR, send } from '../datagrams/respond.js';

/**
 * `GET /keys` over CoAP: the certificate as CBOR (integer keys 1-5, the signature as 64 bytes);
 * 4.04 when none is configured. `mayAnswer` applies the amplification rule of the other routes.
 */
export function keysRoute(ctx: ActorContext, mayAnswer: (req: IncomingMessage, res: OutgoingMessage, payloadBytes: number) => boolean) {
  return async (req: IncomingMessage, res: OutgoingMessage): Promise<string> => {
    const certificate = await ctx.call('manifester', (m) => m.signingCertificate());
    if (!certificate) throw new UpdaterError('NOT_FOUND', 'this server has no signing key certificate (signing.certificate_file)');
    const body = encodeCertificate(certificate);
    if (!mayAnswer(req, res, body.length)) return '4.01';
    send(res, '2.05', body, { 'Content-Format': CONTENT_FORMAT_CBOR });
    return '2.05';
  };
}
