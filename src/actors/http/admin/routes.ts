import { Counter } from 'prom-client';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { UpdaterError, errorStatus } from '../../../shared/errors.js';
import type { ActorContext } from '../../runtime.js';
import { artifactKey, MAX_ADMIN_BODY_BYTES, parseArtifactBody, parseLogLevelBody, parsePublishBody, parseRolloutBody } from './body.js';
import { AdminAuth } from './config-token.js';
import { AdminAudit } from './audit.js';
import { OperatorAuth, syncOperatorTokens, type Principal } from './principal.js';
import { registerOperatorRoutes } from './operator-routes.js';
import { roleAllows, routeRole, type AdminMethod, type Role } from '../../../shared/admin-roles.js';
import { registerFleetRoutes } from './fleet-routes.js';
import { registerUploadRoutes } from './upload.js';
import { registerWebhookRoutes } from './webhook-routes.js';
import { registerDeviceAdminRoutes } from './device-identity-routes.js';
import { readBody } from '../server/body.js';
import type { HttpMetrics } from '../server/metrics.js';
import { STREAMED_BODY, type AdminQuery, type AdminRoute } from './route-types.js';
import { registerTargetingRoutes } from './targeting-routes.js';
import { methodNotAllowed, sendError, sendJson } from '../server/respond.js';
import { answerFailure, openRequest } from '../server/route.js';

// The admin API (docs/operations.md, "The calls"), HTTP only. Every /admin/* path, known or
// not, is authenticated first; the Authorization header is read here and never logged.
//
//   operator ─▶ auth (token, failure bucket) ─▶ role (ADMIN_ROUTE_ROLES) ─▶ body checks ─▶ manifester (tracks, state file)
//                 │                                                                    └▶ supervisor (log level, gc)
//                 └──────────── every change and every refusal ─▶ audit log (fleet actor)
//
// Every route registered through `route` below needs a row in ADMIN_ROUTE_ROLES
// (src/shared/admin-roles.ts), which names the role it takes; a route without one stops the
// server at start. Adding a route is adding its row there.


const METHODS = { get: 'GET', post: 'POST', put: 'PUT', del: 'DELETE' } as const satisfies Record<string, AdminMethod>;

/**
 * The role a route needs, from its row. A fallback (`any`: a 405 or a 404) takes any valid
 * token: it answers no more than that the path or method does not exist.
 */
function neededRole(method: Parameters<AdminRoute>[0], path: string): Role {
  if (method === 'any') return 'read';
  const row = routeRole(METHODS[method], path);
  if (!row) throw new Error(`admin route ${METHODS[method]} ${path} has no row in ADMIN_ROUTE_ROLES (src/shared/admin-roles.ts)`);
  return row.role;
}

export interface AdminDeps {
  ctx: ActorContext;
  metrics: HttpMetrics;
  isDraining(): boolean;
}

/** The admin routes on each admin listener; one token bucket and one failure counter for all. */
export function registerAdminRoutes(apps: readonly TemplatedApp[], deps: AdminDeps): { flushAudit(): void } {
  const { ctx, metrics } = deps;
  const { admin } = ctx.config;
  const auth = new OperatorAuth(new AdminAuth(admin.token, admin.authFailureBurst, admin.authFailureRefillPerSecond));
  const auditLost = new Counter({
    name: 'updater_admin_audit_rows_lost_total',
    help: 'Audit rows (refusals, and the answers of changes) that could not be handed to the fleet actor: restarting, waiting for its database, or too slow',
    registers: [ctx.registry],
  });
  const audit = new AdminAudit(ctx.config.fleet.enabled ? {
    send: (rows) => ctx.call('fleet', (f) => f.audit(rows)),
    begin: (row) => ctx.call('fleet', (f) => f.auditBegin(row)),
    end: (id, status, detail) => ctx.call('fleet', (f) => f.auditEnd(id, status, detail)),
  } : undefined, {
    lost(rows, err, first) {
      auditLost.inc(rows);
      if (first) ctx.log.warn({ err, rows }, 'audit rows could not be handed to the fleet actor; counting the lost ones until they can');
    },
    recovered: () => ctx.log.warn('audit rows are handed to the fleet actor again'),
  });
  if (ctx.config.fleet.enabled) syncOperatorTokens(auth, (known) => ctx.call('fleet', (f) => f.operatorTokens(known)), ctx.log);
  const failures = new Counter({
    name: 'updater_admin_auth_failures_total',
    help: 'Admin requests refused for a missing or wrong token, by answer',
    labelNames: ['result'],
    registers: [ctx.registry],
  });

  const serving = { metrics, isDraining: () => deps.isDraining(), log: ctx.log };
  /** Authenticates, then reads the body (when the method has one) and runs the handler. */
  const route: AdminRoute = (method, path, name, handler, bodyLimit = MAX_ADMIN_BODY_BYTES) => {
    const needed = neededRole(method, path);
    for (const app of apps) app[method](path, (res: HttpResponse, req: HttpRequest) => {
      // The request object is only valid until the first await: take what is needed now.
      // The raw query first: uWS decodes getQuery(key) in place, which garbles the raw query
      // read after it when a value is percent-encoded (artifact=app%2Flinux%2Farm64).
      const raw = req.getQuery() ?? '';
      const verb = req.getMethod().toUpperCase();
      const where = raw === '' ? req.getUrl() : `${req.getUrl()}?${raw}`;
      let who: Principal | null = null;
      let detail = '';
      /** The audit row of a change, committed before the change (audit.ts); undefined for reads and refusals. */
      let begun: Promise<number | undefined> | undefined;
      const recordAudit = (status: number) => {
        if (!begun) return audit.record(who, verb, where, status, detail);
        begun.then((id) => (id === undefined ? audit.record(who, verb, where, status, detail) : audit.end(id, status, detail)),
          () => audit.record(who, verb, where, status, detail));
      };
      const request = openRequest(res, name, serving, false, recordAudit);
      if (!request) return;
      const { ex, done: finish } = request;
      const identified = auth.identify(req.getHeader('authorization'));
      if ('refused' in identified) {
        const outcome = identified.refused;
        failures.inc({ result: outcome });
        detail = identified.detail;
        if (outcome === 'throttled') {
          sendError(ex, new UpdaterError('RATE_LIMITED'), { 'Retry-After': '1' });
        } else {
          ctx.log.warn({ path: req.getUrl(), remote: Buffer.from(res.getRemoteAddressAsText()).toString(), reason: identified.detail }, 'admin request without a valid token');
          sendError(ex, new UpdaterError('UNAUTHORIZED'), { 'WWW-Authenticate': 'Bearer' });
        }
        return finish();
      }
      who = identified.principal;
      // A valid token without the role: 403, and the failure bucket is not touched (the token
      // is known; guessing is what the bucket slows down).
      if (!roleAllows(who.role, needed)) {
        detail = `role ${who.role} may not call this (needs ${needed})`;
        sendError(ex, new UpdaterError('FORBIDDEN', `the role ${who.role} may not call ${verb} ${req.getUrl()}; it needs ${needed}`));
        return finish();
      }
      if (method === 'post' || method === 'put' || method === 'del') {
        begun = audit.begin(who, verb, where);
        begun.catch(() => undefined); // answered below, or by the upload before it stores a byte
      }
      const query: AdminQuery = {
        artifact: req.getQuery('artifact'), raw, ...(path.includes('/:') ? { param: req.getParameter(0) } : {}), who, audit: {},
        audited: begun ?? Promise.resolve(undefined),
      };
      const streamed = method === 'put' && bodyLimit === STREAMED_BODY;
      if (streamed) query.upload = { contentLength: req.getHeader('content-length'), contentSha256: req.getHeader('x-content-sha256') };
      const body = method === 'post' || (method === 'put' && !streamed) ? readBody(ex, req, bodyLimit) : undefined;
      body?.catch(() => undefined); // handled by the handler's await; avoids an unhandled rejection
      // An upload reads its body as it comes and waits for its audit row itself (upload.ts); every
      // other change runs only once its row is committed.
      const run = streamed ? handler(ex, body, query) : query.audited.then(() => handler(ex, body, query));
      run.then(() => {
        detail = query.audit.detail ?? '';
        finish();
      }, (err) => {
        answerFailure(ex, err, name, ctx.log, 'admin request failed');
        const { code, message } = errorStatus(err);
        detail = `${code}: ${message}`;
        finish();
      });
    });
  };

  route('get', '/admin/artifacts', 'admin_list', async (ex) => {
    sendJson(ex, 200, await ctx.call('manifester', (m) => m.listTracks()));
  });

  route('post', '/admin/artifacts', 'admin_publish', async (ex, body, query) => {
    const request = parsePublishBody(await body!);
    const outcome = await ctx.call('manifester', (m) => m.publishTrack(request));
    query.audit.detail = `published ${outcome.artifact} ${request.version} (${outcome.hash})${request.rollout ? ' with a rollout' : ''}`;
    ctx.log.info({ artifact: outcome.artifact, hash: outcome.hash, changed: outcome.changed }, 'admin: track published');
    sendJson(ex, 200, outcome);
  });

  route('del', '/admin/artifacts', 'admin_delete', async (ex, _body, query) => {
    const key = artifactKey(query.artifact);
    const removed = await ctx.call('manifester', (m) => m.deleteTrack(key));
    query.audit.detail = `deleted ${key}`;
    ctx.log.info({ artifact: key }, 'admin: track deleted');
    sendJson(ex, 200, { deleted: removed });
  });

  route('post', '/admin/default', 'admin_default', async (ex, body) => {
    const key = parseArtifactBody(await body!, false)!;
    sendJson(ex, 200, await ctx.call('manifester', (m) => m.setDefaultTrack(key)));
  });

  route('post', '/admin/reload', 'admin_reload', async (ex, body) => {
    const key = parseArtifactBody(await body!, true);
    const outcome = await ctx.call('manifester', (m) => m.reloadTracks(key));
    ctx.log.info({ artifact: key ?? '(all)', changed: outcome.changed, failed: outcome.failed.length }, 'admin: reload');
    sendJson(ex, 200, outcome);
  });

  route('post', '/admin/rollout', 'admin_rollout', async (ex, body, query) => {
    const command = parseRolloutBody(await body!);
    const rollout = await ctx.call('manifester', (m) => m.controlRollout(command));
    query.audit.detail = `${command.artifact}: ${'percent' in command ? `percent ${command.percent}` : command.action}; now ${rollout.state} at ${rollout.percent} %`;
    ctx.log.info({ artifact: command.artifact, command, state: rollout.state, percent: rollout.percent }, 'admin: rollout changed');
    sendJson(ex, 200, rollout);
  });

  route('post', '/admin/gc', 'admin_gc', async (ex, body) => {
    await body; // any body is ignored, but it is read (and capped) like the others
    sendJson(ex, 200, await ctx.call('sweeper', (s) => s.sweep()));
  });

  // Live memory per thread: each runs a full collection first, so garbage waiting for one does
  // not read as a leak (docs/memory.md). The collections pause each thread for milliseconds.
  route('post', '/admin/memory', 'admin_memory', async (ex, body) => {
    await body; // ignored, read and capped like /admin/gc's
    sendJson(ex, 200, await ctx.call('supervisor', (s) => s.memory()));
  });

  route('post', '/admin/loglevel', 'admin_loglevel', async (ex, body) => {
    const level = parseLogLevelBody(await body!);
    sendJson(ex, 200, await ctx.call('supervisor', (s) => s.setLogLevel(level)));
  });

  registerFleetRoutes(route, ctx);
  registerDeviceAdminRoutes(route, ctx);
  registerOperatorRoutes(route, ctx, auth);
  registerUploadRoutes(route, ctx);
  registerWebhookRoutes(route, ctx);
  registerTargetingRoutes(route, ctx);

  // Known paths with another method, then unknown admin paths: still only for a valid token.
  route('any', '/admin/artifacts', 'admin_other', async () => {
    throw methodNotAllowed(['GET', 'POST', 'DELETE']);
  });
  const methodsOf = [
    [['/admin/default', '/admin/reload', '/admin/rollout', '/admin/gc', '/admin/memory', '/admin/loglevel'], ['POST']],
    [['/admin/devices', '/admin/fleet', '/admin/reports', '/admin/webhooks'], ['GET']],
    [['/admin/binaries'], ['PUT']],
    [['/admin/devices/:id'], ['GET', 'DELETE']],
    [['/admin/devices/:id/accept', '/admin/devices/:id/reject', '/admin/devices/preauthorize', '/admin/tags'], ['POST']],
    [['/admin/devices/:id/tags'], ['PUT']],
    [['/admin/groups'], ['GET']],
    [['/admin/groups/:name'], ['GET', 'PUT', 'DELETE']],
  ] as const;
  for (const [paths, allow] of methodsOf) {
    for (const path of paths) {
      route('any', path, 'admin_other', async () => {
        throw methodNotAllowed(allow);
      });
    }
  }
  route('any', '/admin', 'admin_other', async () => {
    throw new UpdaterError('NOT_FOUND');
  });
  route('any', '/admin/*', 'admin_other', async () => {
    throw new UpdaterError('NOT_FOUND');
  });
  return { flushAudit: () => audit.flush(true) };
}
