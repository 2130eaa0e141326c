import { createSocket } from 'node:dgram';
import { connect, type Socket } from 'node:net';
import { generate, parse } from 'coap-packet';
import { encodeHeartbeat } from '../shared/wire/cbor.js';
import { ECHO_OPTION, echoValue } from '../shared/wire/echo.js';
import { heartbeatFields } from './fleet.js';
import { OBSERVE_POST, coapPing, garbageDatagram, hostileCborBodies } from './hostile.js';

// Hostile traffic mixed into a soak, at a bounded rate: the inputs of the hostile-input tests
// (CoAP garbage, pings, Observe, malformed CBOR, Block2 probes; HTTP with conflicting framing,
// garbage, oversized and malformed bodies, a hundred headers, half-sent requests left open,
// bursts of connections). A server that keeps memory per hostile input shows it as a rising
// floor in the soak. Every socket is closed by a deadline; at most MAX_OPEN are open at once.
// Against a server with devices.auth on (`unauthenticated`), well-formed heartbeats without a
// token too, over both transports, whose answers are counted by status
// (`…_unauthenticated_heartbeat_answered_401`): each must be refused and none recorded.

export interface HostileOptions {
  readonly httpUrl: string;
  readonly coapUrl?: string;
  /** Hostile inputs per second, all kinds together. */
  readonly perSecond: number;
  /** Add well-formed heartbeats without a device token (for a server with devices.auth on). */
  readonly unauthenticated?: boolean;
}

/** The devices the unauthenticated heartbeats name: a server that records one has let a stranger in. */
export const UNAUTHENTICATED_DEVICES = Array.from({ length: 4 }, (_, i) => `hostile-no-token-${i}`);
/** The last byte of the CoAP token of an unauthenticated heartbeat, to tell its answers apart. */
const NO_TOKEN_MARK = 0x5b;

export interface HostileTraffic {
  stop(): Promise<Record<string, number>>;
}

const TICK_MS = 100;
const MAX_OPEN = 200;
/** A half-sent request is held open this long, then abandoned. */
const HOLD_MS = 3000;
const ANSWER_DEADLINE_MS = 2000;

export function startHostileTraffic(options: HostileOptions): HostileTraffic {
  const http = new URL(options.httpUrl);
  const coap = options.coapUrl ? new URL(options.coapUrl) : undefined;
  const udp = coap ? createSocket('udp4') : undefined;
  const counts: Record<string, number> = {};
  const count = (kind: string) => (counts[kind] = (counts[kind] ?? 0) + 1);
  /** The server's Echo for this socket (docs/coap.md, "Amplification"): sent back so that the answer is the token check's. */
  let echo: Buffer | undefined;
  udp?.on('message', (message) => {
    let packet: ReturnType<typeof parse>;
    try {
      packet = parse(message);
    } catch {
      return;
    }
    if (packet.token.length !== 3 || packet.token[2] !== NO_TOKEN_MARK || packet.code === '0.00') return;
    const value = echoValue(packet.options);
    if (value && !(echo && value.equals(echo))) {
      echo = value;
      return void unauthenticatedCoap(false);
    }
    count(`coap_unauthenticated_heartbeat_answered_${packet.code}`);
  });
  udp?.on('error', () => undefined);
  const open = new Set<Socket>();
  let index = 0;
  const dummyHeartbeat = Buffer.from([0xa1, 0x01, 0x61, 0x78]);
  const cbor = hostileCborBodies(dummyHeartbeat, Buffer.concat([Buffer.from([0xa1, 0x01]), Buffer.alloc(6, 0xa1), Buffer.from([0x01, 0x01])]));

  const datagram = (bytes: Buffer, kind: string) => {
    if (!udp || !coap) return;
    count(kind);
    udp.send(bytes, Number(coap.port || 5683), coap.hostname);
  };
  const coapRequest = (code: string, path: string, payload: Buffer, extra: { name: string; value: Buffer }[] = [], mark = 0x5a) => generate({
    code,
    confirmable: true,
    messageId: index & 0xffff,
    token: Buffer.from([index & 0xff, (index >> 8) & 0xff, mark]),
    options: [...path.split('/').filter(Boolean).map((s) => ({ name: 'Uri-Path', value: Buffer.from(s) })), { name: 'Content-Format', value: Buffer.from([60]) }, ...extra] as never,
    payload,
  }, 65_000);

  const stranger = () => heartbeatFields({ id: UNAUTHENTICATED_DEVICES[index % UNAUTHENTICATED_DEVICES.length]!, versionHash: '0'.repeat(64), artifact: 'app' });
  /** A well-formed heartbeat without a token; `fresh` counts it (a repeat with the server's Echo is the same input). */
  const unauthenticatedCoap = (fresh = true) => {
    if (!udp || !coap) return;
    if (fresh) count('coap_unauthenticated_heartbeat');
    udp.send(coapRequest('POST', '/heartbeat', encodeHeartbeat(stranger()), echo ? [{ name: String(ECHO_OPTION), value: echo }] : [], NO_TOKEN_MARK), Number(coap.port || 5683), coap.hostname);
  };

  /** Sends raw bytes on a fresh TCP connection; closes it on the answer, or after holdMs. */
  const raw = (bytes: string | Buffer, kind: string, holdMs = ANSWER_DEADLINE_MS, countAnswer = false) => {
    if (open.size >= MAX_OPEN) return void count('skipped_max_open');
    count(kind);
    const socket = connect(Number(http.port || 80), http.hostname);
    open.add(socket);
    const timer = setTimeout(() => socket.destroy(), holdMs);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      if (countAnswer) count(`${kind}_answered_${/^HTTP\/1\.1 (\d{3})/.exec(chunk.toString('latin1'))?.[1] ?? 'unparsed'}`);
      if (holdMs === ANSWER_DEADLINE_MS) socket.destroy();
    });
    socket.on('close', () => {
      clearTimeout(timer);
      open.delete(socket);
    });
    socket.write(bytes);
  };
  const host = `Host: ${http.host}\r\n`;
  const inputs: (() => void)[] = [
    () => datagram(garbageDatagram(index), 'coap_garbage'),
    () => datagram(coapPing(index & 0xffff), 'coap_ping'),
    () => datagram(OBSERVE_POST, 'coap_observe_post'),
    () => datagram(coapRequest('POST', '/heartbeat', cbor[index % cbor.length]![1]), 'coap_hostile_cbor'),
    // Block2 SZX 6 for a transfer that does not exist: the amplification probe.
    () => datagram(coapRequest('GET', `/binary/${index.toString(16).padStart(64, '0')}`, Buffer.alloc(0), [{ name: 'Block2', value: Buffer.from([0x06]) }]), 'coap_block2_probe'),
    () => raw(`POST /heartbeat HTTP/1.1\r\n${host}Content-Length: 5\r\nContent-Length: 50\r\n\r\n{"a":1}`, 'http_conflicting_length'),
    () => raw(Buffer.from(garbageDatagram(index + 1)), 'http_garbage'),
    () => raw(`POST /heartbeat HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: 9\r\n\r\n{"device_`, 'http_truncated_json', HOLD_MS),
    () => raw(`POST /heartbeat HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: 13\r\n\r\n{"device_id":`, 'http_malformed_json'),
    () => raw(`POST /heartbeat HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: 200000\r\n\r\n${'['.repeat(200_000)}`, 'http_oversized_body'),
    () => raw(`GET /health HTTP/1.1\r\n${host}${Array.from({ length: 120 }, (_, i) => `X-H${i}: ${i}\r\n`).join('')}\r\n`, 'http_many_headers'),
    () => raw(`GET /heal`, 'http_half_sent', HOLD_MS),
    () => raw(`GET http://${http.host}/health HTTP/1.1\r\n${host}\r\n`, 'http_absolute_uri'),
    () => raw(`POST /heartbeat HTTP/1.1\r\n${host}Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\n\r\n`, 'http_chunk_extension'),
    () => raw(`GET /health HTTP/1.0\r\n\r\n`, 'http_1_0'),
  ];
  if (options.unauthenticated) {
    inputs.push(
      () => {
        const body = JSON.stringify(stranger());
        raw(`POST /heartbeat HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, 'http_unauthenticated_heartbeat', ANSWER_DEADLINE_MS, true);
      },
      () => unauthenticatedCoap(),
    );
  }
  const perTick = Math.max(1, Math.round((options.perSecond * TICK_MS) / 1000));
  const timer = setInterval(() => {
    for (let i = 0; i < perTick; i++) {
      inputs[index % inputs.length]!();
      index++;
    }
  }, TICK_MS);

  return {
    async stop() {
      clearInterval(timer);
      for (const socket of open) socket.destroy();
      udp?.close();
      return counts;
    },
  };
}
