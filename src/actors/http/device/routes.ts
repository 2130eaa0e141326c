import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { createReportLog } from '../../front-ends/report-log.js';
import { ReportLimiter, reportLimitCounter } from '../../../shared/report-limit.js';
import { reportRecord } from '../../front-ends/fleet-feed.js';
import type { TransferKind } from '../../../messages/store.js';
import { validateReport, MAX_DEVICE_BODY_BYTES } from '../../../shared/wire/validate.js';
import { UpdaterError } from '../../../shared/errors.js';
import { patchFormatSegment, type DeltaFormat } from '../../../shared/delta-formats.js';
import { assertSha256Hex } from '../../../shared/hash.js';
import { parseJson, readBody } from '../server/body.js';
import { noneMatch, rangeApplies, transferETag } from './conditional.js';
import { parseRange } from './range.js';
import { exchange, methodNotAllowed, send, sendError, sendJson, type Exchange } from '../server/respond.js';
import { answerFailure, openRequest } from '../server/route.js';
import { streamTransfer } from './stream.js';
import { registerDeviceAuthRoute } from './auth-route.js';
import type { DeviceApp, DeviceRoute, RouteDeps } from './route-types.js';
import { keysRoute } from './keys-route.js';
import { heartbeatHandler } from './heartbeat-route.js';
import { sendMetrics } from '../server/metrics-route.js';

/** The header's name as bytes, which uWS reads in place (a string it copies on every request, respond.ts). */
const AUTHORIZATION = Buffer.from('authorization');

/** The device routes on every device listener (HTTP, HTTPS): one batcher and one set of counters for all. */
export function registerDeviceRoutes(deviceApps: readonly DeviceApp[], deps: RouteDeps): void {
  const { ctx, metrics } = deps;
  const apps = deviceApps.map((d) => d.app);
  const serving = { metrics, isDraining: () => deps.isDraining(), log: ctx.log };
  /**
   * Registers a route: its handler's promise settles once the request is answered, and a
   * failure is answered with the error registry's status. GET routes answer HEAD too (RFC 9110
   * §9.3.2): the same headers, no body.
   */
  const route: DeviceRoute = (method, path, name, handler) => {
    const serve = (head: boolean, certifiedIdOf: DeviceApp['certifiedId']) => (res: HttpResponse, req: HttpRequest) => {
      // Read before the first await (uWS reuses the request object); listeners without a
      // certificate front never look at the header.
      const certifiedId = certifiedIdOf?.(req);
      const request = openRequest(res, name, serving, head);
      if (!request) return;
      const { ex, done } = request;
      const fail = (err: unknown) => {
        answerFailure(ex, err, name, ctx.log, 'request failed');
        done();
      };
      let handled: Promise<void>;
      try {
        handled = handler(ex, req, certifiedId);
      } catch (err) {
        handled = Promise.reject(err);
      }
      // A throw from `done` or `fail` themselves is the server's own fault, logged.
      void handled.then(done, fail).catch((err) => ctx.log.error({ err, route: name }, 'request failed after its answer'));
    };
    for (const { app, certifiedId } of deviceApps) {
      app[method](path, serve(false, certifiedId));
      if (method === 'get') app.head(path, serve(true, certifiedId));
    }
    allowed.set(path, method === 'get' ? ['GET', 'HEAD'] : ['POST']);
  };
  const allowed = new Map<string, string[]>();

  const logReport = createReportLog(ctx.log, ctx.registry);
  const reportLimit = new ReportLimiter({ burst: ctx.config.fleet.reportBurst, perMinute: ctx.config.fleet.reportsPerMinute });
  const reportLimited = reportLimitCounter(ctx.registry, 'http');

  const { gate } = deps;
  /** The Authorization header of a device request, read before the first await (uWS forgets it after); '' with auth off. */
  const authorizationOf = (req: HttpRequest) => (gate.on ? req.getHeader(AUTHORIZATION) : '');

  // The busiest route, one object per request and no promise when the snapshot holds the
  // answer (heartbeat-route.ts).
  for (const { app, certifiedId } of deviceApps) app.post('/heartbeat', heartbeatHandler(deps, serving, authorizationOf, certifiedId));
  allowed.set('/heartbeat', ['POST']);

  route('post', '/report', 'report', async (ex, req, certified) => {
    const authorization = authorizationOf(req);
    const body = await readBody(ex, req, MAX_DEVICE_BODY_BYTES);
    const pass = gate.admitBearer(authorization, certified);
    const report = validateReport(parseJson(body));
    gate.requireDevice(pass, report.deviceId);
    const receivedAtMs = Date.now();
    const waitMs = reportLimit.take(report.deviceId, receivedAtMs);
    if (waitMs > 0) {
      // Neither logged nor handed on: a flood must not reach the log, the table or the webhooks.
      reportLimited();
      sendError(ex, new UpdaterError('REPORT_RATE_LIMITED'), { 'Retry-After': String(Math.ceil(waitMs / 1000)) });
      return;
    }
    metrics.report(report.success);
    logReport(report);
    send(ex, 204, '');
    deps.fleet.report(reportRecord(report, receivedAtMs));
  });

  route('get', '/delta/:from/:to', 'delta', async (ex, req, certified) => {
    gate.admitBearer(authorizationOf(req), certified);
    const from = assertSha256Hex(req.getParameter(0), 'from');
    const to = assertSha256Hex(req.getParameter(1), 'to');
    await serveTransfer(ex, req, 'delta', to, from, deps);
  });

  // A delta of another patch format than bsdiff40 (the manifest's delta_format).
  route('get', '/delta/:from/:to/:format', 'delta', async (ex, req, certified) => {
    gate.admitBearer(authorizationOf(req), certified);
    const from = assertSha256Hex(req.getParameter(0), 'from');
    const to = assertSha256Hex(req.getParameter(1), 'to');
    await serveTransfer(ex, req, 'delta', to, from, deps, patchFormatSegment(req.getParameter(2)));
  });

  route('get', '/binary/:hash', 'binary', async (ex, req, certified) => {
    gate.admitBearer(authorizationOf(req), certified);
    const hash = assertSha256Hex(req.getParameter(0), 'hash');
    await serveTransfer(ex, req, 'full', hash, undefined, deps);
  });

  route('get', '/health', 'health', async (ex) => {
    const [health, store] = await Promise.all([
      ctx.call('manifester', (m) => m.health()),
      ctx.call('store-keeper', (s) => s.condition()),
    ]);
    // A full or read-only store still serves devices; it only refuses publishes and new files.
    // So does a cluster replica that lost its database (docs/scaling.md).
    // With device auth on, what a track serves is for devices with a token, not for anyone.
    const shown = gate.on ? { database: health.database } : health;
    sendJson(ex, 200, { ...shown, status: store === 'writable' && health.database !== 'unreachable' ? 'ok' : 'degraded', store });
  });

  route('get', '/keys', 'keys', keysRoute(ctx));

  // With metrics.listener: admin it is served on listen.admin instead (metrics-route.ts).
  if (ctx.config.metrics.listener === 'public') route('get', '/metrics', 'metrics', (ex) => sendMetrics(ex, ctx));

  if (gate.on) registerDeviceAuthRoute(route, deps);

  // Other methods on known paths, registered last so uWS tries the routes above first.
  for (const [path, allow] of allowed) {
    for (const app of apps) app.any(path, (res) => sendError(exchange(res), methodNotAllowed(allow)));
  }
}

async function serveTransfer(ex: Exchange, req: HttpRequest, kind: TransferKind, to: string, from: string | undefined, deps: RouteDeps, format?: DeltaFormat): Promise<void> {
  // Headers must be read before the first await: uWS reuses the request object afterwards.
  const rangeHeader = req.getHeader('range');
  const ifRange = req.getHeader('if-range');
  const ifNoneMatch = req.getHeader('if-none-match');
  const location = await deps.transfers.find(kind, to, from, format);
  const etag = transferETag(location.hash);
  if (noneMatch(ifNoneMatch, etag)) {
    send(ex, 304, '', { ETag: etag, 'Accept-Ranges': 'bytes' });
    return;
  }
  const range = rangeApplies(ifRange, etag) ? parseRange(rangeHeader, location.size) : { kind: 'full' as const };
  if (range.kind === 'unsatisfiable') {
    send(ex, 416, JSON.stringify({ error: { code: 'INVALID_RANGE', message: 'the requested range cannot be satisfied' } }), { 'Content-Range': `bytes */${location.size}` });
    return;
  }
  const [start, end] = range.kind === 'partial' ? [range.start, range.end] : [0, location.size - 1];
  const headers: Record<string, string> = range.kind === 'partial' ? { 'Content-Range': `bytes ${start}-${end}/${location.size}` } : {};
  const download = streamTransfer(ex, location, start, end - start + 1, { status: range.kind === 'partial' ? 206 : 200, headers, headOnly: ex.head }, deps.transfers);
  deps.downloads.add(download);
  try {
    await download;
    if (!ex.aborted && !ex.head) deps.metrics.transferred(kind, end - start + 1);
  } finally {
    deps.downloads.delete(download);
  }
}
