import { createSocket, type Socket } from 'node:dgram';
import { generate, parse, type ParsedPacket } from 'coap-packet';

// A UDP relay on 127.0.0.1 between a real agent's CoAP transport and the real server's CoAP
// listener, to play an attacker on the path: it keeps the payload of each heartbeat answer
// and can answer a later heartbeat with a kept (or altered) payload instead. Every datagram
// goes through one upstream socket, so the server's Echo values (bound to an address) hold.

export interface CoapRelay {
  readonly url: string;
  /** The payloads of the 2.05 answers to heartbeats, oldest first. */
  readonly heartbeatAnswers: Buffer[];
  /** Paths the agent asked for. */
  readonly paths: string[];
  /** When set, a 2.05 heartbeat answer's payload is replaced by what this returns. */
  replaceHeartbeatAnswer?: (payload: Buffer) => Buffer;
  close(): Promise<void>;
}

export async function startCoapRelay(upstreamPort: number): Promise<CoapRelay> {
  const front: Socket = createSocket('udp4');
  const back: Socket = createSocket('udp4');
  let client: { address: string; port: number } | undefined;
  const pathOf = new Map<string, string>();
  const relay: CoapRelay = {
    url: '',
    heartbeatAnswers: [],
    paths: [],
    close: async () => {
      await Promise.all([new Promise<void>((r) => front.close(() => r())), new Promise<void>((r) => back.close(() => r()))]);
    },
  };
  front.on('message', (message, rinfo) => {
    client = { address: rinfo.address, port: rinfo.port };
    try {
      const packet = parse(message);
      const path = packet.options.filter((o) => o.name === 'Uri-Path').map((o) => o.value.toString()).join('/');
      if (path) {
        pathOf.set(packet.token.toString('hex'), path);
        relay.paths.push(path);
      }
    } catch {
      // not CoAP: relayed as it is
    }
    back.send(message, upstreamPort, '127.0.0.1');
  });
  back.on('message', (message) => {
    if (!client) return;
    let out: Buffer = message;
    try {
      const packet: ParsedPacket = parse(message);
      if (packet.code === '2.05' && pathOf.get(packet.token.toString('hex')) === 'heartbeat') {
        relay.heartbeatAnswers.push(Buffer.from(packet.payload));
        if (relay.replaceHeartbeatAnswer) out = Buffer.from(generate({ ...packet, payload: relay.replaceHeartbeatAnswer(packet.payload) }));
      }
    } catch {
      // relayed as it is
    }
    front.send(out, client.port, client.address);
  });
  await new Promise<void>((resolve) => front.bind(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => back.bind(0, '127.0.0.1', resolve));
  (relay as { url: string }).url = `coap://127.0.0.1:${front.address().port}`;
  return relay;
}
