import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as forward, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { HttpRequest } from 'uWebSockets.js';
import type { Config } from '../../../shared/config/types.js';
import { UpdaterError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';

// Device client certificates on `listen.https` (tls.client_ca_file, docs/operations.md "Device
// certificates"). uWebSockets.js 20.30 can ask for and verify a client certificate but gives no
// way to read it, so with a device CA configured that port is Node's TLS server instead: it
// verifies the certificate, reads its subject CN, and forwards each request, streamed both
// ways, to the same uWS routes on a listener bound to 127.0.0.1 on an ephemeral port.
//
//   device ─TLS (client cert)─▶ node:https (verify against the CA, read CN)
//        ─HTTP─▶ 127.0.0.1:ephemeral uWS App ─▶ device (and admin) routes
//                 x-updater-certified-device: <CN, URI-encoded>
//                 x-updater-forward-secret:   <32 random bytes of this process, hex>
//
// The certified device reaches the routes only together with the secret, compared in constant
// time; any other client (on any listener, or connecting to the loopback port itself) that sends
// the header is treated as having no certificate, and gets nothing from it. Only the loopback
// listener's routes read the headers at all: the other listeners' heartbeat path is unchanged.

export const CERTIFIED_DEVICE_HEADER = 'x-updater-certified-device';
export const FORWARD_SECRET_HEADER = 'x-updater-forward-secret';

/** Headers of one hop (RFC 9110 §7.6.1), and ours, which only this forwarder may set. */
const NOT_FORWARDED = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', CERTIFIED_DEVICE_HEADER, FORWARD_SECRET_HEADER]);

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** The per-process secret and the check of the headers on the loopback listener. */
export class CertifiedForwarding {
  private readonly secret = randomBytes(32).toString('hex');
  private readonly expected = digest(this.secret);

  /**
   * The certified device of a request on the loopback listener, or undefined (then the token
   * rules apply). Both sides are hashed to 32 bytes first, so the comparison takes the same
   * time whatever the length of what was sent. Read before the handler's first await.
   */
  certifiedId(req: HttpRequest): string | undefined {
    const claimed = req.getHeader(CERTIFIED_DEVICE_HEADER);
    const genuine = timingSafeEqual(digest(req.getHeader(FORWARD_SECRET_HEADER)), this.expected);
    if (!genuine || claimed === '') return undefined;
    try {
      return decodeURIComponent(claimed);
    } catch {
      return undefined;
    }
  }

  /** The headers forwarded for a request: the client's, minus one hop's and ours, plus ours when certified. */
  headersFor(headers: IncomingHttpHeaders, certifiedId: string | undefined): IncomingHttpHeaders {
    const out: IncomingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers)) if (!NOT_FORWARDED.has(name)) out[name] = value;
    if (certifiedId !== undefined) {
      out[CERTIFIED_DEVICE_HEADER] = encodeURIComponent(certifiedId);
      out[FORWARD_SECRET_HEADER] = this.secret;
    }
    return out;
  }
}

/**
 * The device a connection's verified certificate names: its subject's one CN. Undefined for a
 * connection without a certificate; null for one whose certificate is refused (not signed by the
 * device CA, expired, not for client authentication, or naming no single CN).
 */
export function certifiedDevice(socket: TLSSocket): string | undefined | null {
  const cert = socket.getPeerCertificate();
  if (!cert || Object.keys(cert).length === 0) return undefined;
  const cn = cert.subject?.CN as unknown;
  if (!socket.authorized || typeof cn !== 'string' || cn === '') return null;
  return cn;
}

export interface CertificateFront {
  readonly port: number;
  /** Takes no new connections (drain); open downloads go on until close(). */
  stopListening(): void;
  close(): void;
}

/** Serves `listen.https` with client certificates, forwarding to the uWS listener on 127.0.0.1:`innerPort`. */
export async function startCertificateFront(config: Config, forwarding: CertifiedForwarding, innerPort: number, log: Logger): Promise<CertificateFront> {
  const tls = config.tls!;
  const { host, port } = config.listen.https!;
  const server: Server = createServer({
    cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile), ca: readFileSync(tls.clientCaFile!),
    // Asked for, not required: a device without a certificate uses its token on this port too.
    // One that presents a certificate the CA did not sign is cut off in secureConnection below.
    requestCert: true, rejectUnauthorized: false,
  });
  server.on('secureConnection', (socket: TLSSocket) => {
    if (certifiedDevice(socket) !== null) return;
    log.debug({ reason: socket.authorizationError ?? 'no single subject CN' }, 'client certificate refused; connection closed');
    socket.destroy();
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => relay(req, res, forwarding, innerPort));
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new UpdaterError('INTERNAL', `cannot listen on ${host}:${port} for listen.https (${err.message})`)));
    server.listen({ host, port, exclusive: true }, resolve);
  });
  const bound = (server.address() as { port: number }).port;
  return {
    port: bound,
    stopListening: () => server.close(),
    close() {
      server.close();
      server.closeAllConnections();
    },
  };
}

/** One request, streamed to the uWS listener and its answer streamed back. */
function relay(req: IncomingMessage, res: ServerResponse, forwarding: CertifiedForwarding, innerPort: number): void {
  const certifiedId = certifiedDevice(req.socket as TLSSocket) ?? undefined;
  // A fresh loopback connection per request (no keep-alive pool): uWS closes connections on
  // its own (after an error answer, when idle), and a pooled socket it just closed would turn
  // a good request into a 502.
  const upstream = forward({
    host: '127.0.0.1', port: innerPort, method: req.method, path: req.url, agent: false,
    headers: forwarding.headersFor(req.headers, certifiedId),
  }, (answer) => {
    const headers: IncomingHttpHeaders = {};
    for (const [name, value] of Object.entries(answer.headers)) if (!NOT_FORWARDED.has(name)) headers[name] = value;
    res.writeHead(answer.statusCode ?? 502, answer.statusMessage, headers as Record<string, string | string[]>);
    answer.pipe(res);
  });
  upstream.on('error', () => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'INTERNAL', message: 'the request could not be relayed' } }));
    else res.destroy();
  });
  // A device that goes away mid-download ends the upstream request too, so uWS sees the abort.
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}
