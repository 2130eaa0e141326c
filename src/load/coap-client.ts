import { createHash } from 'node:crypto';
import type { ParsedPacket } from 'coap-packet';
import type { Manifest } from '../messages/manifester.js';
import { decodeAuthAnswer, decodeManifest, encodeAuthRequest } from '../shared/wire/cbor.js';
import { isUpdaterError } from '../shared/errors.js';
import { CoapTransport } from '../../agent/coap-transport.js';
import type { AuthAnswer, HeartbeatAnswer } from './http-client.js';

// The harness's CoAP client: the device agent's own (agent/coap-transport.ts), over one UDP
// socket for every simulated device: confirmable requests with the RFC's retransmission, each
// answer matched to its request by token, and downloads block by block. Status codes are
// mapped onto their HTTP counterparts so the report reads the same for both. Like a device, it
// sends back the server's last Echo value (RFC 9175) and asks again once when an answer
// brings a new one (docs/coap.md, "Amplification"). With device auth each request carries its
// device's token as the Uri-Query `auth=` (docs/protocol.md), and POST /auth is CBOR over the
// same socket.
//
// node-coap's client (its Agent) was used here before, and lost answers: it matches an incoming
// message by its message ID before its token, so a separate response (a confirmable answer the
// server sends after an empty ACK, when it takes over 50 ms) whose server-chosen message ID
// equals that of another request still awaiting its ACK was taken for that request,
// acknowledged, and dropped for its token; its own request never had an answer
// (load/coap-client.test.ts). Beside busy processes, where the server is slow to answer
// POST /auth, 3 of 50 enrollments of load/harness-auth once ended that way.

/**
 * Every simulated device shares the socket: a hundred block answers arriving together take
 * more than Linux's default 208 KiB of receive buffer (the kernel counts 2 KiB and more for
 * each small datagram), and every one dropped costs the RFC's retransmission wait (2 to 3 s,
 * doubling each time). The kernel caps it at net.core.rmem_max.
 */
const RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024;

/**
 * An exchange whose answer never comes is given up after this: later than the harness's own
 * deadlines (run.ts, load-auth.ts), so that theirs are the timeouts the report names.
 */
const EXCHANGE_DEADLINE_MS = 15_000;

const STATUS_OF: Record<string, number> = { '2.05': 200, '2.04': 204, '4.00': 400, '4.01': 401, '4.03': 403, '4.04': 404, '4.13': 413, '4.29': 429, '5.03': 503, '5.00': 500 };

const statusOf = (answer: ParsedPacket) => STATUS_OF[answer.code] ?? 0;

export class CoapLoadClient {
  private readonly transport: CoapTransport;

  constructor(coapUrl: string) {
    const url = new URL(coapUrl);
    if (url.protocol !== 'coap:') throw new Error(`--coap-url must be a coap:// address (got ${coapUrl})`);
    this.transport = new CoapTransport(coapUrl, { receiveBufferBytes: RECEIVE_BUFFER_BYTES });
  }

  async heartbeat(body: Buffer, token?: string): Promise<HeartbeatAnswer> {
    const answer = await this.transport.post('/heartbeat', body, EXCHANGE_DEADLINE_MS, token);
    const status = statusOf(answer);
    let manifest: Manifest | undefined;
    if (status === 200) {
      try {
        manifest = decodeManifest(answer.payload) as unknown as Manifest;
      } catch {
        throw new Error('malformed manifest');
      }
    }
    return { status, manifest, bytesUp: body.length, bytesDown: answer.payload.length, queuedMs: 0 };
  }

  /** Sends an update report (CBOR with integer keys); resolves with the status mapped to HTTP (204 expected). */
  async report(body: Buffer, token?: string): Promise<number> {
    return statusOf(await this.transport.post('/report', body, EXCHANGE_DEADLINE_MS, token));
  }

  /** POST /auth (CBOR with integer keys); the token, or pending (2.05 with a state, mapped to 202). */
  async authenticate(fields: Record<string, unknown>): Promise<AuthAnswer> {
    const res = await this.transport.post('/auth', encodeAuthRequest(fields), EXCHANGE_DEADLINE_MS);
    const status = statusOf(res);
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
   * Fetches a whole transfer by Block2, each block asked for by number under a token of its
   * own and placed by its number. node-coap's own reassembly appends every answer that carries
   * the download's token, so a block answered twice (a request retransmitted under load, the
   * copy answered from the server's duplicate cache) would land twice and hash wrong.
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
      await this.transport.download(path, 0, 0, sink, AbortSignal.timeout(deadlineMs), token);
    } catch (err) {
      const code = isUpdaterError(err) ? STATUS_OF[String(err.details?.status)] : undefined;
      if (code !== undefined) return { status: code, size, hash: '' };
      throw err;
    }
    return { status: 200, size, hash: hasher.digest('hex') };
  }

  close(): void {
    void this.transport.close();
  }
}
