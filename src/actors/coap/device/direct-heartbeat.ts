import type { RemoteInfo, Socket } from 'node:dgram';
import coap, { type IncomingMessage, type Server as CoapServer } from 'coap';
import { generate, type ParsedPacket } from 'coap-packet';
import type { Logger } from 'pino';
import type { FleetFeed } from '../../front-ends/fleet-feed.js';
import { echoValue } from '../../../shared/wire/echo.js';
import { answerBudget, answerBytes, type AddressProof } from '../datagrams/amplification.js';
import type { RememberAnswer } from '../datagrams/dedup-cache.js';
import { MAX_REQUEST_BODY_BYTES } from '../datagrams/guard.js';
import type { CoapMetrics } from '../datagrams/metrics.js';
import type { HeartbeatDecision, HeartbeatOutcome } from './heartbeat.js';

// The steady state without node-coap's exchange. For every request node-coap makes an
// IncomingMessage and an OutgoingMessage (each a stream), a piggyback timer and a sender with
// a retransmission timer of its own; for a heartbeat answered from the decision snapshot,
// that was about a quarter of the CoAP thread's time. A plain confirmable heartbeat (POST
// /heartbeat, no Block2, CBOR or no Content-Format) whose answer the snapshot holds is
// answered here, from the datagram the guard parsed: the piggybacked ACK that node-coap
// would send (same message ID and token, 2.05, Content-Format 60), made with node-coap's own
// codec and kept in node-coap's duplicate cache under node-coap's key, so that a
// retransmission is answered by node-coap with the same bytes.
//
// Everything else goes to node-coap as before: another request, a retransmission, a full
// `coap.max_in_flight`. A heartbeat decided here but not answered here (a refusal, an answer
// that waits for the manifester, an unproven source owed an Echo, an answer too large for a
// datagram) goes with its decision, which the route takes instead of deciding again: nothing
// is counted or asked twice.

const HEARTBEAT_SEGMENT = Buffer.from('heartbeat');
const CBOR_FORMAT = 60;
const CBOR_FORMAT_OPTION = { name: 'Content-Format', value: Buffer.of(CBOR_FORMAT) } as const;
/** The options of the answer: Content-Format (one byte of header, one of value). */
const ANSWER_OPTION_BYTES = 2;

export interface DirectHeartbeatDeps {
  server: CoapServer;
  socket: Socket;
  decide: HeartbeatDecision<ParsedPacket>;
  remember: RememberAnswer;
  fleet: FleetFeed;
  metrics: CoapMetrics;
  proof: AddressProof;
  /** Whether node-coap must take every request (coap.max_in_flight reached): it answers 5.03. */
  full(): boolean;
  log: Logger;
}

export class DirectHeartbeats {
  private readonly handedOver = new WeakMap<object, Promise<HeartbeatOutcome>>();

  constructor(private readonly deps: DirectHeartbeatDeps) {}

  /** Answers `packet` and returns true, or returns false: node-coap takes it. */
  answer(packet: ParsedPacket, rinfo: RemoteInfo): boolean {
    const { deps } = this;
    const { server } = deps;
    if (!isPlainHeartbeat(packet) || deps.full()) return false;
    // node-coap's own key (its client identifier, message ID and token): a request already
    // answered is answered again by node-coap, from the cache.
    const key = server._toKey({ rsinfo: rinfo } as unknown as IncomingMessage, packet, true);
    if (server._lru.peek(key) !== undefined) return false;
    const done = deps.metrics.startRequest('heartbeat');
    let decided: HeartbeatOutcome | Promise<HeartbeatOutcome>;
    try {
      decided = deps.decide(packet);
    } catch (err) {
      return this.handOver(packet, Promise.reject(err));
    }
    if (decided instanceof Promise) return this.handOver(packet, decided);
    const size = answerBytes(packet.token.length, decided.body.length, ANSWER_OPTION_BYTES);
    if (size > coap.parameters.maxMessageSize || (size > answerBudget(rinfo.size) && !deps.proof.proves(rinfo.address, echoValue(packet.options)))) {
      return this.handOver(packet, Promise.resolve(decided));
    }
    const datagram = generate({
      messageId: packet.messageId, token: packet.token, code: '2.05', confirmable: false, ack: true, reset: false,
      options: [CBOR_FORMAT_OPTION], payload: decided.body,
    }, coap.parameters.maxMessageSize);
    deps.remember(key, datagram);
    deps.socket.send(datagram, rinfo.port, rinfo.address, (err) => {
      if (err) deps.log.debug({ err }, 'coap heartbeat answer not sent');
    });
    done('2.05');
    deps.metrics.heartbeatAnswered('direct');
    deps.fleet.heartbeat(decided.heartbeat, 'coap', decided.receivedAtMs);
    return true;
  }

  /** The decision of a heartbeat handed to node-coap, for its route; taken once. */
  decided(req: IncomingMessage): Promise<HeartbeatOutcome> | undefined {
    const decided = this.handedOver.get(req._packet);
    if (decided) this.handedOver.delete(req._packet);
    return decided;
  }

  private handOver(packet: ParsedPacket, decided: Promise<HeartbeatOutcome>): false {
    // Awaited by the route, or dropped with the packet when node-coap answers 5.03 first.
    decided.catch(() => undefined);
    this.handedOver.set(packet, decided);
    return false;
  }
}

/**
 * POST /heartbeat, confirmable, with no Block2 option and a CBOR body (or no Content-Format)
 * within the body limit: a request whose only answer is a piggybacked 2.05 or the route's
 * refusal. The limit is the guard's too; checked here, no caller can hand the decoder more.
 */
function isPlainHeartbeat(packet: ParsedPacket): boolean {
  if (packet.code !== '0.02' || !packet.confirmable || packet.ack || packet.reset) return false;
  if (packet.payload.length > MAX_REQUEST_BODY_BYTES) return false;
  let path = 0;
  for (const { name, value } of packet.options) {
    if (name === 'Uri-Path') {
      if (++path > 1 || !value.equals(HEARTBEAT_SEGMENT)) return false;
    } else if (name === 'Block2') {
      return false;
    } else if (name === 'Content-Format') {
      if (value.length !== 1 || value[0] !== CBOR_FORMAT) return false;
    }
  }
  return path === 1;
}
