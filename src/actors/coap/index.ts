import { createSocket, type Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';
import coap, { type CoapPacket, type IncomingMessage, type OutgoingMessage } from 'coap';
import { generate, type ParsedPacket } from 'coap-packet';
import type { ControlApi } from '../../messages/lifecycle.js';
import { UpdaterError } from '../../shared/errors.js';
import { runActor, type OwnApi } from '../runtime.js';
import { TransferLocator } from '../front-ends/transfer-locator.js';
import { AddressProof } from './datagrams/amplification.js';
import { boundDedupCache } from './datagrams/dedup-cache.js';
import { InFlight } from './datagrams/in-flight.js';
import { inspectDatagram } from './datagrams/guard.js';
import { createCoapMetrics } from './datagrams/metrics.js';
import { requestBytes, sendError } from './datagrams/respond.js';
import { deviceRoutes } from './device/routes.js';
import { fleetFeedFor } from '../front-ends/fleet-feed.js';
import { deviceGateFor } from '../front-ends/device-gate.js';
import { heartbeatAnswers } from '../front-ends/heartbeat-answers.js';
import { TransferReader } from './device/transfer.js';
import { DirectHeartbeats } from './device/direct-heartbeat.js';
import { heartbeatDecision } from './device/heartbeat.js';

//   UDP datagram ─▶ guard (parse once; drop garbage; mark oversized bodies)
//                 ─▶ node-coap (duplicate detection from its response cache, piggybacked ACK)
//                 ─▶ admission (coap.max_in_flight, else 5.03 + Max-Age)
//                 ─▶ routes ─▶ manifester (heartbeat) | store-keeper locate + own file read (Block2)

/** How long a drain lets requests under way finish before the socket closes regardless. */
const DRAIN_REQUESTS_MS = 5_000;

await runActor(async (ctx) => {
  const listen = ctx.config.listen.coap;
  if (!listen) throw new UpdaterError('CONFIG_INVALID', 'the coap front-end runs only when listen.coap is set');
  const { dedupCacheBytes, maxInFlight } = ctx.config.coap;
  const type = isIPv6(listen.host) ? 'udp6' : 'udp4';
  // cacheSize bounds the memory of the responses kept to answer retransmitted requests,
  // counted with what each one holds (dedup-cache.ts).
  const server = coap.createServer({ type, cacheSize: dedupCacheBytes });
  const remember = boundDedupCache(server);
  const inFlight = new InFlight(maxInFlight);
  const tooLarge = new WeakSet<object>();
  const refused = new WeakMap<object, UpdaterError>();
  let draining = false;

  const metrics = createCoapMetrics(ctx.registry, {
    inFlight: () => inFlight.count,
    dedupCacheBytes: () => server._lru.calculatedSize ?? 0,
  });
  const transfers = new TransferReader(TransferLocator.of(ctx));
  const fleet = fleetFeedFor(ctx);
  const gate = await deviceGateFor(ctx);
  const heartbeats = heartbeatAnswers(ctx, 'cbor');
  const proof = new AddressProof();
  const socket = await bind(type, listen.host, listen.port);
  const direct = new DirectHeartbeats({
    server, socket, remember, fleet, metrics, proof, log: ctx.log,
    // Only plain heartbeats reach it (direct-heartbeat.ts), their bodies whole and within the limit.
    decide: heartbeatDecision<ParsedPacket>(gate, heartbeats, { options: (packet) => packet.options, body: (packet) => packet.payload }),
    full: () => inFlight.count >= inFlight.limit,
  });
  const handle = deviceRoutes({
    ctx, metrics, transfers, fleet, gate, heartbeats, proof, decided: (req) => direct.decided(req), isTooLarge: (req) => tooLarge.has(req._packet),
  });

  server.on('request', (req: IncomingMessage, res: OutgoingMessage) => {
    // A send that fails (socket closed during a drain, packet too large) must not end the thread.
    res.on('error', (err: Error) => ctx.log.debug({ err }, 'coap response not sent'));
    const refusal = refused.get(req._packet);
    if (refusal) {
      sendError(res, refusal, requestBytes(req));
      return;
    }
    if (!inFlight.tryEnter()) {
      sendError(res, new UpdaterError('OVERLOADED'), requestBytes(req));
      metrics.dropped('overloaded');
      return;
    }
    // The handler answers its own failures; one that escapes it must not end the thread.
    handle(req, res).catch((err) => ctx.log.error({ err }, 'coap request failed outside its route')).finally(() => inFlight.leave());
  });
  server.on('error', (err: Error) => ctx.log.error({ err }, 'coap socket error'));

  server.listen(socket);
  // node-coap's own datagram listener parses and would answer garbage itself; the guard
  // takes its place and hands node-coap only packets worth answering (see guard.ts).
  socket.removeAllListeners('message');
  socket.on('message', (datagram, rinfo) => {
    if (draining) return;
    const verdict = inspectDatagram(datagram);
    if (verdict.kind === 'drop') {
      metrics.dropped(verdict.reason);
      return;
    }
    if (verdict.kind === 'ping' || verdict.kind === 'reject') {
      // RFC 7252 §4.3: a ping is answered with a Reset of the same message ID, 4 bytes for 4;
      // §4.2: so is a confirmable message with a format error, which goes no further.
      if (verdict.kind === 'reject') metrics.dropped('malformed');
      socket.send(generate({ messageId: verdict.messageId, reset: true, confirmable: false, code: '0.00', token: Buffer.alloc(0) }), rinfo.port, rinfo.address);
      return;
    }
    if (verdict.kind === 'too-large') tooLarge.add(verdict.packet);
    if (verdict.kind === 'refuse') {
      refused.set(verdict.packet, verdict.refusal === 'proxy'
        ? new UpdaterError('PROXYING_NOT_SUPPORTED')
        : new UpdaterError('UNSUPPORTED_CRITICAL_OPTION'));
    }
    try {
      if (verdict.kind === 'pass' && direct.answer(verdict.packet, rinfo)) return;
      // node-coap's entry point for a parsed datagram (what its own listener calls after parsing).
      server._handle(verdict.packet as CoapPacket, rinfo);
    } catch (err) {
      // node-coap refuses some well-formed packets by throwing (e.g. a malformed option value).
      metrics.dropped('refused-by-coap');
      ctx.log.debug({ err }, 'coap packet refused');
    }
  });
  ctx.log.info({ host: listen.host, port: socket.address().port, dedupCacheBytes, maxInFlight }, 'coap listening');

  return {
    async drain() {
      draining = true;
      gate.stop();
      heartbeats.stop();
      await inFlight.idle(DRAIN_REQUESTS_MS);
      server.close();
      await new Promise<void>((resolve) => socket.close(() => resolve()));
      await transfers.files.closeAll();
      fleet.flush();
    },
  } satisfies OwnApi<ControlApi>;
});

function bind(type: 'udp4' | 'udp6', host: string, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    // No reuseAddr: a second server on the same port must fail loudly, not share datagrams.
    const socket = createSocket({ type, reuseAddr: false });
    socket.once('error', (err) => reject(new UpdaterError('INTERNAL', `cannot listen on udp ${host}:${port}: ${err.message}`)));
    socket.bind(port, host, () => resolve(socket));
  });
}
