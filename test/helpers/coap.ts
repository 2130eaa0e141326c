import { createSocket, type Socket } from 'node:dgram';
import { generate, parse, type ParsedPacket } from 'coap-packet';
import { freePort, type Fixture } from './fixture.js';
import { startTestServer, type ArtifactEntry, type TestServer } from './server.js';
import { decodeManifest, encodeHeartbeat, encodeReport } from '../../src/shared/wire/cbor.js';
import { ECHO_OPTION, echoValue } from '../../src/shared/wire/echo.js';

// A raw CoAP client over one UDP socket: exact control of message ids, tokens, options and
// bytes, which node-coap's agent hides (it retransmits, reassembles blocks and converts options).

export interface CoapRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  payload?: Buffer;
  /** Block2 option value bytes, exactly as sent. */
  block2?: Buffer;
  /** Block1 option value bytes: a request body sent block-wise. */
  block1?: Buffer;
  contentFormat?: number;
  confirmable?: boolean;
  messageId?: number;
  token?: Buffer;
  /** Further options by name or number (e.g. '65001', 'Proxy-Uri'), for conformance tests. */
  extraOptions?: { name: string; value: Buffer }[];
}

export interface CoapResponse {
  code: string;
  payload: Buffer;
  packet: ParsedPacket;
  /** The datagram as received. */
  raw: Buffer;
  option(name: string): Buffer | undefined;
}

let nextMessageId = Math.floor(Math.random() * 0xffff);

export function requestDatagram(request: CoapRequest): Buffer {
  const options: { name: string; value: Buffer }[] = request.path.split('/').filter(Boolean).map((segment) => ({ name: 'Uri-Path', value: Buffer.from(segment) }));
  if (request.contentFormat !== undefined) options.push({ name: 'Content-Format', value: uint(request.contentFormat) });
  if (request.block2) options.push({ name: 'Block2', value: request.block2 });
  if (request.block1) options.push({ name: 'Block1', value: request.block1 });
  options.push(...(request.extraOptions ?? []));
  return generate({
    code: request.method,
    confirmable: request.confirmable ?? true,
    messageId: request.messageId ?? (nextMessageId = (nextMessageId + 1) & 0xffff),
    token: request.token ?? Buffer.from([Math.floor(Math.random() * 256), Math.floor(Math.random() * 256), 1, 2]),
    options: options as never,
    payload: request.payload ?? Buffer.alloc(0),
  }, 65_000);
}

function uint(n: number): Buffer {
  if (n === 0) return Buffer.alloc(0);
  const bytes = n < 0x100 ? 1 : n < 0x10000 ? 2 : 4;
  const out = Buffer.alloc(bytes);
  out.writeUIntBE(n, 0, bytes);
  return out;
}

export function blockOption(num: number, size: number, more = false): Buffer {
  const raw = num * 16 + (more ? 8 : 0) + (Math.log2(size) - 4);
  if (raw === 0) return Buffer.alloc(0);
  const bytes = raw < 0x100 ? 1 : raw < 0x10000 ? 2 : 3;
  const out = Buffer.alloc(bytes);
  out.writeUIntBE(raw, 0, bytes);
  return out;
}

export function parseBlock2(value: Buffer | undefined): { num: number; more: boolean; size: number } | undefined {
  if (!value) return undefined;
  let raw = 0;
  for (const b of value) raw = raw * 256 + b;
  return { num: Math.floor(raw / 16), more: (raw & 8) !== 0, size: 2 ** ((raw & 7) + 4) };
}

export class CoapClient {
  private readonly socket: Socket;
  private readonly waiting = new Map<string, (response: CoapResponse) => void>();
  /** Every datagram received, in order: tests of retransmission and dropping look at it. */
  readonly received: CoapResponse[] = [];
  /** The last Echo value the server sent (see request). */
  private echo: Buffer | undefined;

  constructor(readonly port: number, readonly host = '127.0.0.1') {
    this.socket = createSocket('udp4');
    this.socket.on('message', (raw) => {
      let packet: ParsedPacket;
      try {
        packet = parse(raw);
      } catch {
        return;
      }
      const response: CoapResponse = {
        code: packet.code,
        payload: packet.payload,
        packet,
        raw,
        option: (name) => packet.options.find((o) => o.name === name)?.value,
      };
      this.received.push(response);
      const key = packet.token.toString('hex');
      const wake = this.waiting.get(key);
      if (wake && packet.code !== '0.00') {
        this.waiting.delete(key);
        wake(response);
      }
    });
  }

  /** Sends raw bytes; nothing is awaited. */
  sendRaw(datagram: Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.send(datagram, this.port, this.host, (err) => (err ? reject(err) : resolve())));
  }

  /**
   * Sends a request and resolves with the response carrying its token (ACKs for separate
   * responses included). Like a device, it sends back the last Echo value the server gave it
   * (RFC 9175, docs/coap.md "Amplification"), and asks again once when an answer brings a new
   * one (4.01, or a block smaller than asked). `exchange` sends exact bytes instead.
   */
  async request(request: CoapRequest, timeoutMs = 5_000): Promise<CoapResponse> {
    const once = () => {
      const token = request.token ?? Buffer.from(Array.from({ length: 4 }, () => Math.floor(Math.random() * 256)));
      const echo = this.echo ? [{ name: String(ECHO_OPTION), value: this.echo }] : [];
      return this.exchange(requestDatagram({ ...request, token, extraOptions: [...(request.extraOptions ?? []), ...echo] }), token, timeoutMs);
    };
    const response = await once();
    const echo = echoValue(response.packet.options);
    if (!echo || (this.echo && echo.equals(this.echo))) return response;
    this.echo = echo;
    return once();
  }

  /**
   * Sends an exact datagram and waits for the response with `token`. Like a device, it
   * retransmits the same datagram (same message id) every `retransmitMs` while unanswered:
   * UDP may lose either direction.
   */
  exchange(datagram: Buffer, token: Buffer, timeoutMs = 5_000, retransmitMs = 1_000): Promise<CoapResponse> {
    const key = token.toString('hex');
    return new Promise((resolve, reject) => {
      const again = setInterval(() => this.sendRaw(datagram).catch(() => undefined), retransmitMs);
      const timer = setTimeout(() => {
        clearInterval(again);
        this.waiting.delete(key);
        reject(new Error(`no CoAP response within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(key, (response) => {
        clearTimeout(timer);
        clearInterval(again);
        resolve(response);
      });
      this.sendRaw(datagram).catch(reject);
    });
  }

  heartbeat(versionHash: string, artifact?: string): Promise<CoapResponse> {
    return this.request({ method: 'POST', path: '/heartbeat', payload: heartbeatCbor(versionHash, artifact), contentFormat: 60 });
  }

  report(fields: Record<string, unknown>): Promise<CoapResponse> {
    return this.request({ method: 'POST', path: '/report', payload: encodeReport(fields), contentFormat: 60 });
  }

  /** Fetches a whole transfer block by block with `size`-byte blocks, from block `from`. */
  async download(path: string, size: number, from = 0): Promise<{ body: Buffer; blocks: CoapResponse[] }> {
    const blocks: CoapResponse[] = [];
    for (let num = from; ; num++) {
      const response = await this.request({ method: 'GET', path, block2: blockOption(num, size) });
      if (response.code !== '2.05') throw new Error(`block ${num} answered ${response.code}: ${response.payload.toString()}`);
      blocks.push(response);
      if (!parseBlock2(response.option('Block2'))?.more) break;
      if (blocks.length > 100_000) throw new Error('download does not end');
    }
    return { body: Buffer.concat(blocks.map((b) => b.payload)), blocks };
  }

  close(): void {
    this.socket.close();
  }
}

/** The same heartbeat as test/helpers/http.ts sends, in CBOR with integer keys. */
export function heartbeatCbor(versionHash: string, artifact?: string): Buffer {
  return encodeHeartbeat(heartbeatFieldsFor(versionHash, artifact));
}

export function heartbeatFieldsFor(versionHash: string, artifact?: string): Record<string, unknown> {
  return {
    device_id: 'device-0001',
    version_hash: versionHash,
    hw_info: { arch: 'amd64', os: 'linux', free_ram: 1 << 28, free_disk: 1 << 30 },
    timestamp: Math.floor(Date.now() / 1000),
    version: '1.0.0',
    ...(artifact !== undefined ? { artifact } : {}),
  };
}

export function manifestOf(response: CoapResponse): Record<string, unknown> {
  return decodeManifest(response.payload);
}

/** The real server with both listeners, and a raw CoAP client pointed at it. */
export async function startCoapTestServer(fixture: Fixture, artifacts: ArtifactEntry[], overrides: Record<string, unknown> = {}): Promise<{ server: TestServer; coapPort: number; client: CoapClient; stop(): Promise<void> }> {
  const coapPort = await freePort();
  const listen = { coap: `127.0.0.1:${coapPort}`, ...(overrides.listen as Record<string, unknown> | undefined) };
  const server = await startTestServer(fixture, artifacts, { ...overrides, listen });
  const client = new CoapClient(coapPort);
  return {
    server,
    coapPort,
    client,
    async stop() {
      client.close();
      await server.stop();
    },
  };
}
