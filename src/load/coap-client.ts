import { createHash } from 'node:crypto';
import coap, { type IncomingMessage } from 'coap';
import type { Manifest } from '../messages/manifester.js';
import { decodeAuthAnswer, decodeManifest, encodeAuthRequest } from '../shared/wire/cbor.js';
import { ECHO_OPTION, echoValue } from '../shared/wire/echo.js';
import { isUpdaterError } from '../shared/errors.js';
import { CoapTransport } from '../../agent/coap-transport.js';
import type { AuthAnswer, HeartbeatAnswer } from './http-client.js';

// The harness's CoAP client: node-coap over one UDP socket (its Agent), confirmable requests
// with node-coap's own retransmission; downloads through the device agent's own client (see
// download). Status
// codes are mapped onto their HTTP counterparts so the report reads the same for both. Like
// a device, it sends back the server's last Echo value (RFC 9175) and asks again once when an
// answer brings a new one (docs/coap.md, "Amplification"). With device auth each request
// carries its device's token as the Uri-Query `auth=` (docs/protocol.md), and POST /auth is
// CBOR over the same socket.

/**
 * The downloads of every simulated device share one socket: a hundred block answers arriving
 * together take more than Linux's default 208 KiB of receive buffer (the kernel counts 2 KiB
 * and more for each small datagram), and every one dropped costs the RFC's retransmission wait
 * (2 to 3 s, doubling each time). The kernel caps it at net.core.rmem_max.
 */
const DOWNLOAD_RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024;

const STATUS_OF: Record<string, number> = { '2.05': 200, '2.04': 204, '4.00': 400, '4.01': 401, '4.03': 403, '4.04': 404, '4.13': 413, '4.29': 429, '5.03': 503, '5.00': 500 };

export class CoapLoadClient {
  private readonly agent: InstanceType<typeof coap.Agent>;
  private readonly host: string;
  private readonly port: number;
  private echo: Buffer | undefined;
  private readonly blocks: CoapTransport;

  constructor(coapUrl: string) {
    const url = new URL(coapUrl);
    if (url.protocol !== 'coap:') throw new Error(`--coap-url must be a coap:// address (got ${coapUrl})`);
    this.host = url.hostname;
    this.port = Number(url.port || 5683);
    this.agent = new coap.Agent({ type: 'udp4' });
    this.blocks = new CoapTransport(coapUrl, { receiveBufferBytes: DOWNLOAD_RECEIVE_BUFFER_BYTES });
  }

  private once(method: 'GET' | 'POST', pathname: string, options: Record<string, string | Buffer>, echo: Buffer | undefined, body: Buffer | undefined, token: string | undefined): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = coap.request({
        hostname: this.host, port: this.port, method, pathname, confirmable: true, agent: this.agent,
        ...(token === undefined ? {} : { query: `auth=${token}` }),
        options: echo ? { ...options, [String(ECHO_OPTION)]: echo } : options,
      });
      req.on('response', resolve);
      req.on('timeout', () => reject(new Error('timeout')));
      req.on('error', reject);
      req.end(body);
    });
  }

  private async send(method: 'GET' | 'POST', pathname: string, options: Record<string, string | Buffer>, body?: Buffer, token?: string): Promise<IncomingMessage> {
    // Compare with the Echo this request carried, not with the client's latest: requests run
    // concurrently, and one sent without an Echo may come back with the very value another
    // answer brought meanwhile (the server's value changes once a second), which it must still
    // send back once.
    const sent = this.echo;
    const res = await this.once(method, pathname, options, sent, body, token);
    const echo = echoValue(res._packet.options);
    if (!echo || (sent && echo.equals(sent))) return res;
    this.echo = echo;
    return this.once(method, pathname, options, echo, body, token);
  }

  async heartbeat(body: Buffer, token?: string): Promise<HeartbeatAnswer> {
    const res = await this.send('POST', '/heartbeat', { 'Content-Format': 'application/cbor' }, body, token);
    const status = STATUS_OF[String(res.code)] ?? 0;
    let manifest: Manifest | undefined;
    if (status === 200) {
      try {
        manifest = decodeManifest(res.payload) as unknown as Manifest;
      } catch {
        throw new Error('malformed manifest');
      }
    }
    return { status, manifest, bytesUp: body.length, bytesDown: res.payload.length, queuedMs: 0 };
  }

  /** Sends an update report (CBOR with integer keys); resolves with the status mapped to HTTP (204 expected). */
  async report(body: Buffer, token?: string): Promise<number> {
    const res = await this.send('POST', '/report', { 'Content-Format': 'application/cbor' }, body, token);
    return STATUS_OF[String(res.code)] ?? 0;
  }

  /** POST /auth (CBOR with integer keys); the token, or pending (2.05 with a state, mapped to 202). */
  async authenticate(fields: Record<string, unknown>): Promise<AuthAnswer> {
    const res = await this.send('POST', '/auth', { 'Content-Format': 'application/cbor' }, encodeAuthRequest(fields));
    const status = STATUS_OF[String(res.code)] ?? 0;
    if (status !== 200) return { status };
    let answer: Record<string, unknown>;
    try {
      answer = decodeAuthAnswer(res.payload);
    } catch {
      throw new Error('malformed auth answer');
    }
    if (answer.state === 'pending') return { status: 202, pending: true };
    if (typeof answer.token !== 'string' || answer.token.length === 0) throw new Error('malformed auth answer');
    return { status, token: answer.token };
  }

  /**
   * Fetches a whole transfer by Block2 with the device agent's client, which asks for each
   * block by number under a token of its own and places it by its number. node-coap's own
   * reassembly appends every answer that carries the download's token, so a block answered
   * twice (a request retransmitted under load, the copy answered from the server's duplicate
   * cache) would land twice and the transfer would hash wrong.
   */
  async download(path: string, deadlineMs: number, token?: string): Promise<{ status: number; size: number; hash: string }> {
    const hasher = createHash('sha256');
    let size = 0;
    const sink = {
      begin: async () => undefined,
      write: async (chunk: Uint8Array) => {
        hasher.update(chunk);
        size += chunk.length;
      },
    };
    try {
      await this.blocks.download(path, 0, 0, sink, AbortSignal.timeout(deadlineMs), token);
    } catch (err) {
      const code = isUpdaterError(err) ? STATUS_OF[String(err.details?.status)] : undefined;
      if (code !== undefined) return { status: code, size, hash: '' };
      throw err;
    }
    return { status: 200, size, hash: hasher.digest('hex') };
  }

  close(): void {
    this.agent.close();
    void this.blocks.close();
  }
}
