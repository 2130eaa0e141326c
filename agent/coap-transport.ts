import { randomBytes, randomInt } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';
import { generate, parse, type NamedOption, type ParsedPacket } from 'coap-packet';
import { UpdaterError, isUpdaterError } from '../src/shared/errors.js';
import { encodeBlockOption, MAX_BLOCK_BYTES, parseBlockOption, type BlockOption } from '../src/shared/wire/block2.js';
import { decodeAuthAnswer, decodeCertificate, decodeManifest, encodeAuthRequest, encodeHeartbeat, encodeReport } from '../src/shared/wire/cbor.js';
import { ECHO_OPTION, echoValue } from '../src/shared/wire/echo.js';
import type { HeartbeatWire, ReportWire } from '../src/shared/wire/keys.js';
import { transportError, type DownloadSink, type Transport } from './transport.js';

// The device protocol over CoAP (RFC 7252) with CBOR bodies. node-coap's client gathers a
// whole Block2 transfer in memory before it answers, which would neither bound memory nor
// allow a resume, so this transport speaks the packets itself (coap-packet is node-coap's
// own codec): confirmable requests with the RFC's retransmission timing, and a download as
// one Block2 request per block, starting at the block that holds the durable offset.

const ACK_TIMEOUT_MS = 2000;
const ACK_RANDOM_FACTOR = 1.5;
const MAX_RETRANSMIT = 4;
const CBOR_FORMAT = Buffer.from([60]);

interface Exchange {
  resolve(packet: ParsedPacket): void;
  reject(err: unknown): void;
  acknowledged: boolean;
}

function readBlock2(packet: ParsedPacket): BlockOption | undefined {
  const option = packet.options.find((o) => o.name === 'Block2');
  if (!option) return undefined;
  const block = parseBlockOption(option.value);
  if (!block) throw new UpdaterError('AGENT_REQUEST_REFUSED', 'coap: the server answered a malformed Block2 option (or a BERT block size over UDP)');
  return block;
}

/**
 * RFC 7959's rules for a Block2 answer that the download's arithmetic relies on: the block is no
 * larger than asked for, and only the last one is short.
 */
function checkBlock(endpoint: string, block: BlockOption, payloadBytes: number, askedSize: number): void {
  const fits = block.more ? payloadBytes === block.size : payloadBytes <= block.size;
  if (block.size > askedSize || !fits) {
    throw new UpdaterError('AGENT_REQUEST_REFUSED',
      `coap: GET ${endpoint} answered ${payloadBytes} bytes as block ${block.num} of ${block.size} bytes${block.more ? ' with more to come' : ''} (asked for ${askedSize})`);
  }
}

export class CoapTransport implements Transport {
  readonly name = 'coap' as const;
  private readonly host: string;
  private readonly port: number;
  private socket: Socket | undefined;
  /** The exchanges under way by token, and by message ID for the Empty messages that carry none. */
  private readonly exchanges = new Map<string, Exchange>();
  private readonly byMessageId = new Map<number, Exchange>();
  private nextMessageId = randomInt(0, 0x10000);
  /** The last Echo value the server sent (see request). */
  private echo: Buffer | undefined;
  /** The device token, sent as the Uri-Query option `auth=` (enroll.ts sets it when the device has an identity). */
  token: string | undefined;

  /**
   * `receiveBufferBytes`: the socket's receive buffer, for a caller that runs many exchanges over
   * it at once (the load harness); a device's one exchange at a time needs the system's default.
   */
  constructor(baseUrl: string, private readonly options: { receiveBufferBytes?: number } = {}) {
    const url = new URL(baseUrl);
    this.host = url.hostname.replace(/^\[|\]$/g, '');
    this.port = Number(url.port || 5683);
  }

  private open(): Socket {
    if (this.socket) return this.socket;
    const socket = createSocket({ type: isIPv6(this.host) ? 'udp6' : 'udp4', ...(this.options.receiveBufferBytes ? { recvBufferSize: this.options.receiveBufferBytes } : {}) });
    socket.on('message', (message) => this.receive(message));
    socket.on('error', (err) => {
      for (const exchange of this.exchanges.values()) exchange.reject(transportError('coap', 'socket', err));
    });
    socket.unref();
    this.socket = socket;
    return socket;
  }

  private send(packet: Parameters<typeof generate>[0]): void {
    this.open().send(generate(packet), this.port, this.host);
  }

  private receive(message: Buffer): void {
    let packet: ParsedPacket;
    try {
      packet = parse(message);
    } catch {
      return; // not CoAP: ignore, as RFC 7252 asks
    }
    const empty = packet.code === '0.00';
    // A confirmable response is acknowledged; a confirmable Empty message is a ping, answered
    // with a Reset (RFC 7252 §4.3).
    if (packet.confirmable) this.send({ messageId: packet.messageId, code: '0.00', ...(empty ? { reset: true } : { ack: true }) });
    // An Empty message (the ACK before a separate response, or a Reset) carries no token: it
    // names its request by message ID (RFC 7252 §4.2). Everything else is matched by token.
    if (empty && !packet.ack && !packet.reset) return;
    const exchange = empty ? this.byMessageId.get(packet.messageId) : this.exchanges.get(packet.token.toString('hex'));
    if (!exchange) return;
    if (packet.reset) {
      exchange.reject(transportError('coap', 'exchange', new Error('the server reset the exchange')));
    } else if (packet.code === '0.00') {
      exchange.acknowledged = true; // empty ACK: a separate response follows
    } else {
      exchange.resolve(packet);
    }
  }

  /**
   * One request and its response. The server holds an answer to an address that has not
   * proved it receives to 3x the request (docs/coap.md, "Amplification"): it then answers
   * 4.01 or a smaller block with an Echo value (RFC 9175), and the request goes again with
   * it. The value is kept and sent on every later request while the server accepts it.
   * An answer is compared with the Echo its own request carried, not with the latest kept:
   * exchanges may run at once over one socket (the load harness), and one sent without an Echo
   * may come back with the very value another answer brought meanwhile, and must still go again.
   */
  private async request(method: 'GET' | 'POST', path: string, options: NamedOption[], payload: Buffer | undefined,
    timeoutMs: number, signal?: AbortSignal, deviceToken = this.token): Promise<ParsedPacket> {
    const withEcho = (echo: Buffer | undefined) => (echo ? [...options, { name: String(ECHO_OPTION) as NamedOption['name'], value: echo }] : options);
    const carried = this.echo;
    const response = await this.requestOnce(method, path, withEcho(carried), payload, timeoutMs, signal, deviceToken);
    const echo = echoValue(response.options);
    if (!echo || (carried && echo.equals(carried))) return response;
    this.echo = echo;
    return this.requestOnce(method, path, withEcho(echo), payload, timeoutMs, signal, deviceToken);
  }

  /**
   * POST of a CBOR body and the answer whatever its code, for a caller that reads the code
   * itself (the load harness counts each refusal by its code); the device's own calls below
   * refuse every answer but the one they expect.
   */
  post(path: string, body: Buffer, timeoutMs: number, deviceToken?: string): Promise<ParsedPacket> {
    return this.request('POST', path, [{ name: 'Content-Format', value: CBOR_FORMAT }], body, timeoutMs, undefined, deviceToken);
  }

  /** One confirmable request and its response, retransmitted with the RFC's exponential timing. */
  private async requestOnce(method: 'GET' | 'POST', path: string, options: NamedOption[], payload: Buffer | undefined,
    timeoutMs: number, signal: AbortSignal | undefined, deviceToken: string | undefined): Promise<ParsedPacket> {
    const token = randomBytes(4);
    const key = token.toString('hex');
    const messageId = this.nextMessageId = (this.nextMessageId + 1) & 0xffff;
    const pathOptions: NamedOption[] = path.split('/').filter(Boolean).map((segment) => ({ name: 'Uri-Path', value: Buffer.from(segment) }));
    const auth: NamedOption[] = deviceToken ? [{ name: 'Uri-Query', value: Buffer.from(`auth=${deviceToken}`) }] : [];
    const packet = { code: method, messageId, token, confirmable: true, options: [...pathOptions, ...auth, ...options], ...(payload ? { payload } : {}) };
    return new Promise<ParsedPacket>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = () => {
        clearTimeout(timer);
        clearTimeout(deadline);
        signal?.removeEventListener('abort', onAbort);
        this.exchanges.delete(key);
        if (this.byMessageId.get(messageId) === exchange) this.byMessageId.delete(messageId);
      };
      const exchange: Exchange = {
        acknowledged: false,
        resolve: (p) => { finish(); resolve(p); },
        reject: (e) => { finish(); reject(e); },
      };
      const onAbort = () => exchange.reject(isUpdaterError(signal!.reason) ? signal!.reason : transportError('coap', path, signal!.reason));
      const deadline = setTimeout(() => exchange.reject(transportError('coap', `${method} ${path}`, new Error(`no answer within ${timeoutMs} ms`))), timeoutMs);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.exchanges.set(key, exchange);
      this.byMessageId.set(messageId, exchange);
      let wait = ACK_TIMEOUT_MS * (1 + Math.random() * (ACK_RANDOM_FACTOR - 1));
      let sent = 0;
      const transmit = () => {
        if (exchange.acknowledged) return; // the server has it; only the deadline applies now
        if (sent > MAX_RETRANSMIT) {
          exchange.reject(transportError('coap', `${method} ${path}`, new Error(`no acknowledgement after ${sent} transmissions`)));
          return;
        }
        try {
          this.send(packet);
        } catch (err) {
          exchange.reject(transportError('coap', `${method} ${path}`, err));
          return;
        }
        sent++;
        timer = setTimeout(transmit, wait);
        wait *= 2;
      };
      transmit();
    });
  }

  private refuse(packet: ParsedPacket, what: string): never {
    const message = `coap: ${what} answered ${packet.code}`;
    if (packet.code.startsWith('5.')) throw new UpdaterError('AGENT_TRANSPORT_FAILED', message, { transport: 'coap', status: packet.code });
    throw new UpdaterError('AGENT_REQUEST_REFUSED', message, { status: packet.code });
  }

  async heartbeat(body: HeartbeatWire, timeoutMs: number): Promise<unknown> {
    const response = await this.request('POST', '/heartbeat', [{ name: 'Content-Format', value: CBOR_FORMAT }], encodeHeartbeat(body), timeoutMs);
    if (response.code !== '2.05') this.refuse(response, 'heartbeat');
    try {
      return decodeManifest(response.payload);
    } catch (err) {
      throw new UpdaterError('AGENT_MANIFEST_INVALID', `the manifest ${(err as Error).message.replace(/^the (body|manifest) /, '')}`);
    }
  }

  /** POST /auth (devices.auth): `{1: token, 2: expires_in}` or `{3: "pending", 4: retry_after}`. */
  async authenticate(request: Record<string, unknown>, timeoutMs: number): Promise<Record<string, unknown>> {
    const response = await this.request('POST', '/auth', [{ name: 'Content-Format', value: CBOR_FORMAT }], encodeAuthRequest(request), timeoutMs);
    if (response.code !== '2.05') this.refuse(response, 'auth');
    try {
      return decodeAuthAnswer(response.payload);
    } catch (err) {
      throw new UpdaterError('AGENT_REQUEST_REFUSED', `coap: the auth answer ${(err as Error).message}`);
    }
  }

  async keys(timeoutMs: number): Promise<unknown> {
    const response = await this.request('GET', '/keys', [], undefined, timeoutMs);
    if (response.code !== '2.05') this.refuse(response, 'keys');
    try {
      return decodeCertificate(response.payload);
    } catch (err) {
      throw new UpdaterError('AGENT_MANIFEST_INVALID', `GET /keys: ${(err as Error).message}`);
    }
  }

  async report(report: ReportWire, timeoutMs: number): Promise<void> {
    const response = await this.request('POST', '/report', [{ name: 'Content-Format', value: CBOR_FORMAT }], encodeReport(report), timeoutMs);
    if (!response.code.startsWith('2.')) this.refuse(response, 'report');
  }

  /**
   * `deviceToken` is for a caller that downloads for many devices over one socket (the load
   * harness); the agent's own device leaves it to `token`.
   */
  async download(endpoint: string, offset: number, _expectedSize: number, sink: DownloadSink, signal: AbortSignal, deviceToken = this.token): Promise<void> {
    let size = MAX_BLOCK_BYTES;
    let num = Math.floor(offset / size);
    let begun = false;
    for (;;) {
      const block2 = { name: 'Block2' as const, value: encodeBlockOption(num, false, size) };
      const response = await this.request('GET', endpoint, [block2], undefined, ACK_TIMEOUT_MS * 2 ** (MAX_RETRANSMIT + 1), signal, deviceToken);
      if (response.code !== '2.05') this.refuse(response, `GET ${endpoint}`);
      const option = readBlock2(response);
      // A server without block-wise transfer answers the whole file at once.
      const block = option ?? { num: 0, more: false, size: Math.max(response.payload.length, 1) };
      if (option) checkBlock(endpoint, option, response.payload.length, size);
      const blockStart = block.num * block.size;
      if (!begun) {
        // The server may pick a smaller block; the durable offset then sits inside this one.
        if (blockStart > offset) throw new UpdaterError('AGENT_REQUEST_REFUSED', `coap: GET ${endpoint} answered block ${block.num}, past byte ${offset}`);
        await sink.begin(offset);
        begun = true;
      } else if (blockStart !== num * size) {
        // After the first block every request starts where the bytes so far end: a block from
        // anywhere else would leave a gap or repeat bytes, and a server that keeps answering an
        // earlier block would hold the download in a loop.
        throw new UpdaterError('AGENT_REQUEST_REFUSED', `coap: GET ${endpoint} answered block ${block.num} of ${block.size} bytes for byte ${num * size}`);
      }
      const skip = Math.max(0, offset - blockStart);
      if (skip < response.payload.length) await sink.write(response.payload.subarray(skip));
      offset = Math.max(offset, blockStart + response.payload.length);
      // A block past delta_size is refused by the sink; the loop ends when the server says so.
      if (!block.more) return;
      size = block.size;
      num = block.num + 1;
    }
  }

  /** Ends the exchanges under way (their timers would otherwise retransmit on a new socket) and the socket. */
  async close(): Promise<void> {
    for (const exchange of this.exchanges.values()) exchange.reject(transportError('coap', 'close', new Error('the transport was closed')));
    const socket = this.socket;
    this.socket = undefined;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
  }
}
