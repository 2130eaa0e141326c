import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { HeartbeatBatcher } from '../heartbeat-batcher.js';
import { heartbeatRecord, reportRecord, type FleetFeed } from '../fleet-feed.js';
import type { TransferLocator } from '../transfer-locator.js';
import type { TransferKind } from '../../messages/store.js';
import { validateHeartbeat, validateReport, MAX_DEVICE_BODY_BYTES, type HeartbeatFields } from '../../shared/wire/validate.js';
import { UpdaterError } from '../../shared/errors.js';
import { assertSha256Hex } from '../../shared/hash.js';
import type { ActorContext } from '../runtime.js';
import { parseJson, readBody } from './body.js';
import type { HttpMetrics } from './metrics.js';
import { parseRange } from './range.js';
import { exchange, send, sendError, sendJson, type Exchange } from './respond.js';
import { streamTransfer } from './stream.js';


type Handler = (ex: Exchange, req: HttpRequest) => Promise<void>;

export interface RouteDeps {
  ctx: ActorContext;
  metrics: HttpMetrics;
  /** Open downloads, so a drain can wait for them. */
  downloads: Set<Promise<void>>;
  transfers: TransferLocator;
  /** Where answered heartbeats and reports go for the inventory. */
  fleet: FleetFeed;
  isDraining(): boolean;
}

/** The device routes on every device listener (HTTP, HTTPS): one batcher and one set of counters for all. */
export function registerDeviceRoutes(apps: readonly TemplatedApp[], deps: RouteDeps): void {
  const { ctx, metrics } = deps;
  const route = (method: 'get' | 'post', path: string, name: string, handler: Handler) => {
    for (const app of apps) app[method](path, (res: HttpResponse, req: HttpRequest) => {
      const ex = exchange(res);
      const stop = metrics.startRequest(name);
      if (deps.isDraining()) {
        sendError(ex, new UpdaterError('SHUTTING_DOWN'), { Connection: 'close' });
        stop(503);
        return;
      }
      handler(ex, req).then(
        () => stop(ex.status ?? 499),
        (err) => {
          if (errorIsInternal(err)) ctx.log.error({ err, route: name }, 'request failed');
          sendError(ex, err);
          stop(ex.status ?? 499);
        },
      );
    });
  };

  // Heartbeats read in one event-loop turn travel to the manifester in one message.
  const heartbeats = new HeartbeatBatcher((batch) =>
    ctx.call('manifester', (m) => m.heartbeatsJson(batch)));

  route('post', '/heartbeat', 'heartbeat', async (ex, req) => {
    const receivedAtMs = Date.now();
    const body = await readBody(ex, req, MAX_DEVICE_BODY_BYTES);
    const fields = parseJson(body);
    const request = validateHeartbeat(fields);
    send(ex, 200, await heartbeats.heartbeat(request));
    // Only an answered heartbeat enters the inventory, and only once the device has its answer.
    deps.fleet.heartbeat(heartbeatRecord(fields as HeartbeatFields, request, 'http', receivedAtMs));
  });

  route('post', '/report', 'report', async (ex, req) => {
    const body = await readBody(ex, req, MAX_DEVICE_BODY_BYTES);
    const report = validateReport(parseJson(body));
    metrics.report(report.success);
    ctx.log[report.success ? 'info' : 'warn']({ report }, 'update report');
    send(ex, 204, '');
    deps.fleet.report(reportRecord(report, Date.now()));
  });

  route('get', '/delta/:from/:to', 'delta', async (ex, req) => {
    const from = assertSha256Hex(req.getParameter(0), 'from');
    const to = assertSha256Hex(req.getParameter(1), 'to');
    await serveTransfer(ex, req, 'delta', to, from, deps);
  });

  route('get', '/binary/:hash', 'binary', async (ex, req) => {
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
    sendJson(ex, 200, { ...health, status: store === 'writable' && health.database !== 'unreachable' ? 'ok' : 'degraded', store });
  });

  route('get', '/metrics', 'metrics', async (ex) => {
    const text = await ctx.call('supervisor', (s) => s.metricsText());
    send(ex, 200, text, {}, 'text/plain; version=0.0.4; charset=utf-8');
  });

  for (const path of ['/heartbeat', '/report', '/delta/:from/:to', '/binary/:hash', '/health', '/metrics']) {
    for (const app of apps) app.any(path, (res) => sendError(exchange(res), new UpdaterError('METHOD_NOT_ALLOWED')));
  }
}

async function serveTransfer(ex: Exchange, req: HttpRequest, kind: TransferKind, to: string, from: string | undefined, deps: RouteDeps): Promise<void> {
  // Headers must be read before the first await: uWS reuses the request object afterwards.
  const rangeHeader = req.getHeader('range');
  const location = await deps.transfers.find(kind, to, from);
  const range = parseRange(rangeHeader, location.size);
  if (range.kind === 'unsatisfiable') {
    send(ex, 416, JSON.stringify({ error: { code: 'INVALID_RANGE', message: 'the requested range cannot be satisfied' } }), { 'Content-Range': `bytes */${location.size}` });
    return;
  }
  const [start, end] = range.kind === 'partial' ? [range.start, range.end] : [0, location.size - 1];
  const headers: Record<string, string> = range.kind === 'partial' ? { 'Content-Range': `bytes ${start}-${end}/${location.size}` } : {};
  const download = streamTransfer(ex, location, start, end - start + 1, range.kind === 'partial' ? 206 : 200, headers, deps.transfers);
  deps.downloads.add(download);
  try {
    await download;
    if (!ex.aborted) deps.metrics.transferred(kind, end - start + 1);
  } finally {
    deps.downloads.delete(download);
  }
}

function errorIsInternal(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code === undefined || code === 'INTERNAL' || code === 'STORE_CORRUPT';
}
