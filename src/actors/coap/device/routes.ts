import type { IncomingMessage, OutgoingMessage } from 'coap';
import type { TransferKind } from '../../../messages/store.js';
import { reportFields } from '../../../shared/wire/cbor.js';
import { encodeBlockOption, parseBlockOption } from '../../../shared/wire/block2.js';
import { echoValue } from '../../../shared/wire/echo.js';
import { validateReport } from '../../../shared/wire/validate.js';
import { UpdaterError, errorIsInternal, isUpdaterError } from '../../../shared/errors.js';
import { patchFormatSegment } from '../../../shared/delta-formats.js';
import { assertSha256Hex } from '../../../shared/hash.js';
import type { ActorContext } from '../../runtime.js';
import { answerBudget, answerBytes, ECHO_OPTION, type AddressProof } from '../datagrams/amplification.js';
import { selectBlock, unprovenBlock } from './block2.js';
import { MAX_REQUEST_BODY_BYTES } from '../datagrams/guard.js';
import type { HeartbeatAnswers } from '../../front-ends/heartbeat-answers.js';
import { createReportLog } from '../../front-ends/report-log.js';
import { ReportLimiter, reportLimitCounter } from '../../../shared/report-limit.js';
import { reportRecord, type FleetFeed } from '../../front-ends/fleet-feed.js';
import type { CoapMetrics } from '../datagrams/metrics.js';
import { CONTENT_FORMAT_CBOR, CONTENT_FORMAT_OCTETS, requestBytes, send, sendError } from '../datagrams/respond.js';
import type { TransferReader } from './transfer.js';
import type { DeviceGate } from '../../front-ends/device-gate.js';
import { authRoute, queryToken } from './auth-route.js';
import { keysRoute } from './keys-route.js';
import type { Handler } from './handler.js';
import { heartbeatDecision, type HeartbeatOutcome } from './heartbeat.js';

/** RFC 7252 §5.10.6: an ETag is at most 8 bytes; the transfer hash's first 8 stand for it. */
const ETAG_BYTES = 8;

export interface RouteDeps {
  ctx: ActorContext;
  metrics: CoapMetrics;
  transfers: TransferReader;
  /** Where answered heartbeats and reports go for the inventory. */
  fleet: FleetFeed;
  /** Packets whose body was refused before node-coap saw it (see guard.ts). */
  isTooLarge(req: IncomingMessage): boolean;
  /** Echo values (RFC 9175): who has proved it receives what is sent to it (amplification.ts). */
  proof: AddressProof;
  /** Device tokens (devices.auth): the Uri-Query `auth=` of every device request when on. */
  gate: DeviceGate;
  /** Heartbeat answers as CBOR with the CoAP chunk fields: from the front-end's decision snapshot, or the manifester's. */
  heartbeats: HeartbeatAnswers<Uint8Array>;
  /** What the direct path decided of a heartbeat it left to node-coap (direct-heartbeat.ts), taken once. */
  decided(req: IncomingMessage): Promise<HeartbeatOutcome> | undefined;
}


interface Route {
  readonly name: string;
  readonly method: string;
  /** Uri-Path segments, the resource name included. */
  readonly segments: number;
  readonly handler: Handler;
}

/** Returns the request handler; it resolves with the response code once the answer is sent. */
export function deviceRoutes(deps: RouteDeps): (req: IncomingMessage, res: OutgoingMessage) => Promise<string> {
  const { ctx, metrics, transfers } = deps;
  const logReport = createReportLog(ctx.log, ctx.registry);
  const reportLimit = new ReportLimiter({ burst: ctx.config.fleet.reportBurst, perMinute: ctx.config.fleet.reportsPerMinute });
  const reportLimited = reportLimitCounter(ctx.registry, 'coap');

  // A signed manifest is a few hundred bytes: more than 3x a short heartbeat. An unproven
  // source gets 4.01 with an Echo value instead (a few dozen bytes) and asks again with it.
  const mayAnswer = (req: IncomingMessage, res: OutgoingMessage, payloadBytes: number): boolean => {
    if (answerBytes(req._packet.token?.length ?? 0, payloadBytes, 2) <= answerBudget(requestBytes(req)) || proven(req, deps)) return true;
    send(res, '4.01', Buffer.alloc(0), { [ECHO_OPTION]: deps.proof.echoFor(req.rsinfo.address) });
    return false;
  };

  const { gate, heartbeats } = deps;
  const tokenOf = (req: IncomingMessage) => (gate.on ? queryToken(req._packet.options) : undefined);

  const decide = heartbeatDecision<IncomingMessage>(gate, heartbeats, { options: (req) => req._packet.options, body: (req) => cborBody(req, deps) });
  const heartbeat: Handler = async (req, res) => {
    const { heartbeat, body, receivedAtMs } = await (deps.decided(req) ?? decide(req));
    if (!mayAnswer(req, res, body.length)) return '4.01';
    send(res, '2.05', body, { 'Content-Format': CONTENT_FORMAT_CBOR });
    metrics.heartbeatAnswered('node-coap');
    deps.fleet.heartbeat(heartbeat, 'coap', receivedAtMs);
    return '2.05';
  };

  const report: Handler = async (req, res) => {
    const pass = gate.admit(tokenOf(req));
    const update = validateReport(reportFields(cborBody(req, deps)));
    gate.requireDevice(pass, update.deviceId);
    const receivedAtMs = Date.now();
    const waitMs = reportLimit.take(update.deviceId, receivedAtMs);
    if (waitMs > 0) {
      // Neither logged nor handed on: a flood must not reach the log, the table or the webhooks.
      reportLimited();
      return sendError(res, new UpdaterError('REPORT_RATE_LIMITED'), requestBytes(req), { 'Max-Age': Math.ceil(waitMs / 1000) });
    }
    metrics.report(update.success);
    logReport(update, { transport: 'coap' });
    send(res, '2.04');
    deps.fleet.report(reportRecord(update, receivedAtMs));
    return '2.04';
  };

  const transfer = (kind: TransferKind): Handler => async (req, res, path) => {
    gate.admit(tokenOf(req));
    const [from, to] = kind === 'delta'
      ? [assertSha256Hex(path[1], 'from'), assertSha256Hex(path[2], 'to')]
      : [undefined, assertSha256Hex(path[1], 'hash')];
    // delta/{from}/{to}/{format}: a delta of another patch format than bsdiff40.
    const format = kind === 'delta' ? patchFormatSegment(path[3]) : undefined;
    const blockOption = optionValue(req, 'Block2');
    const requested = blockOption ? parseBlockOption(blockOption) : undefined;
    if (blockOption && !requested) throw new UpdaterError('INVALID_FIELD', 'the Block2 option is malformed (SZX 7 or longer than 3 bytes)');
    const location = await transfers.find(kind, to, from, format);
    // An unproven source gets a block small enough for the 3x rule, with an Echo value that
    // earns it the size it asked for on its next request.
    const capped = requested && !proven(req, deps) ? unprovenBlock(requested, answerBudget(requestBytes(req)) - answerBytes(req._packet.token?.length ?? 0, 0, TRANSFER_OPTION_BYTES)) : requested;
    const echo = capped !== requested ? { [ECHO_OPTION]: deps.proof.echoFor(req.rsinfo.address) } : {};
    const block = selectBlock(capped, location.size, requestBytes(req));
    if (block.kind === 'out-of-range') {
      throw new UpdaterError('INVALID_RANGE', `block ${requested?.num} of ${requested?.size} bytes is past the end (${location.size} bytes)`);
    }
    const bytes = await transfers.read(location, block.offset, block.length);
    send(res, '2.05', bytes, {
      'Content-Format': CONTENT_FORMAT_OCTETS,
      ETag: Buffer.from(location.hash, 'hex').subarray(0, ETAG_BYTES),
      Block2: encodeBlockOption(block.num, block.more, block.size),
      // The total size on the first block lets a device check its free space before going on.
      ...(block.num === 0 ? { Size2: location.size } : {}),
      ...echo,
    });
    metrics.transferred(kind, bytes.length);
    return '2.05';
  };

  const routes: Record<string, Route> = {
    heartbeat: { name: 'heartbeat', method: 'POST', segments: 1, handler: heartbeat },
    report: { name: 'report', method: 'POST', segments: 1, handler: report },
    delta: { name: 'delta', method: 'GET', segments: 3, handler: transfer('delta') },
    binary: { name: 'binary', method: 'GET', segments: 2, handler: transfer('full') },
    ...(gate.on ? { auth: { name: 'auth', method: 'POST', segments: 1, handler: authRoute(gate, (req) => cborBody(req, deps)) } } : {}),
    keys: { name: 'keys', method: 'GET', segments: 1, handler: keysRoute(ctx, mayAnswer) },
  };

  return async (req, res) => {
    const path = uriPath(req);
    const route = routes[path[0] ?? ''];
    const name = route?.name ?? 'unknown';
    const stop = metrics.startRequest(name);
    let code: string;
    try {
      if (!route || (path.length !== route.segments && !(route === routes.delta && path.length === 4))) throw new UpdaterError('NOT_FOUND', `no resource /${path.join('/')}`);
      if (req.method !== route.method) throw new UpdaterError('METHOD_NOT_ALLOWED', `${route.name} takes ${route.method}`);
      code = await route.handler(req, res, path);
    } catch (err) {
      if (errorIsInternal(err)) ctx.log.error({ err, route: name }, 'coap request failed');
      const options = isUpdaterError(err) && err.code === 'BODY_TOO_LARGE' ? { Size1: MAX_REQUEST_BODY_BYTES } : {};
      code = sendError(res, err, requestBytes(req), options);
    }
    stop(code);
    return code;
  };
}

/**
 * The options of a block answer at their largest: Content-Format (2), ETag (9), Block2 (4),
 * Size2 (5) and Echo (14), plus the payload marker.
 */
const TRANSFER_OPTION_BYTES = 2 + 9 + 4 + 5 + 14 + 1;

/** Whether the request carries an Echo value this server made for its source address. */
function proven(req: IncomingMessage, deps: RouteDeps): boolean {
  return deps.proof.proves(req.rsinfo.address, echoValue(req._packet.options));
}

/** The body of a POST, refused before decoding when too large or not declared as CBOR. */
function cborBody(req: IncomingMessage, deps: RouteDeps): Buffer {
  if (deps.isTooLarge(req) || req.payload.length > MAX_REQUEST_BODY_BYTES) {
    throw new UpdaterError('BODY_TOO_LARGE', `the body must be at most ${MAX_REQUEST_BODY_BYTES} bytes, in one datagram`);
  }
  const format = req.headers['Content-Format'];
  if (format !== undefined && format !== CONTENT_FORMAT_CBOR) {
    throw new UpdaterError('UNSUPPORTED_MEDIA_TYPE', 'the body must be application/cbor (Content-Format 60)');
  }
  return req.payload;
}

/** Uri-Path options as text segments (one option per segment, RFC 7252 §6.4). */
function uriPath(req: IncomingMessage): string[] {
  const segments: string[] = [];
  for (const option of req._packet.options ?? []) {
    if (option.name === 'Uri-Path') segments.push(Buffer.isBuffer(option.value) ? option.value.toString('utf8') : String(option.value));
  }
  return segments;
}

function optionValue(req: IncomingMessage, name: string): Buffer | undefined {
  const option = (req._packet.options ?? []).find((o) => o.name === name);
  return option && Buffer.isBuffer(option.value) ? option.value : undefined;
}
