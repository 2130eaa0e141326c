import type { AuditQuery, OperatorsApi } from '../../../messages/operators.js';
import type { Peer } from '../../../shared/rpc.js';
import { isRole, ROLES, routesOf, type Role } from '../../../shared/admin-roles.js';
import { parseDuration } from '../../../shared/duration.js';
import { UpdaterError } from '../../../shared/errors.js';
import { invalidField as fail, refuseUnknownFields } from '../../../shared/input.js';
import type { ActorContext } from '../../runtime.js';
import { newOperatorToken, tokenHash, type OperatorAuth } from './principal.js';
import { objectBody } from './body.js';
import type { AdminRoute } from './route-types.js';
import { parseLimit, parseQuery } from './fleet-query.js';
import { methodNotAllowed, sendJson } from '../server/respond.js';

// Operator tokens, the audit log and "who am I" (docs/operations.md). The secret of a new token
// is made here and shown once, in the answer; the fleet actor only ever sees its SHA-256.

const MAX_NAME = 64;
/** Ten years: an expiry is a date an operator means, not a way to write "never". */
const MAX_EXPIRES_IN_S = 3650 * 86_400;

export interface TokenRequest {
  name: string;
  role: Role;
  /** Seconds from now, or null for a token that does not expire. */
  expiresIn: number | null;
}

/** `POST /admin/tokens`: `{"name","role","expires_in"?}`, `expires_in` a duration (`90d`) or seconds. */
export function parseTokenBody(body: Buffer): TokenRequest {
  const fields = objectBody(body, false);
  refuseUnknownFields(fields, ['name', 'role', 'expires_in']);
  const { name, role, expires_in: expiresIn } = fields;
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused here
  if (typeof name !== 'string' || name.trim() === '' || name.length > MAX_NAME || /[\u0000-\u001f\u007f]/.test(name)) {
    fail('name', `must be 1 to ${MAX_NAME} printable characters`);
  }
  if (name === 'config') fail('name', 'config names the configured token; choose another name');
  if (!isRole(role)) fail('role', `must be one of ${ROLES.join(', ')}`);
  let seconds: number | null = null;
  if (expiresIn !== undefined && expiresIn !== null) {
    const ms = typeof expiresIn === 'number' ? expiresIn * 1000 : parseDuration(expiresIn);
    if (ms === undefined || !Number.isFinite(ms) || ms < 1000 || ms / 1000 > MAX_EXPIRES_IN_S || (typeof expiresIn === 'number' && !Number.isInteger(expiresIn))) {
      fail('expires_in', 'must be a duration like 12h or 90d, or whole seconds, from 1 s to 3650 d');
    }
    seconds = Math.round(ms / 1000);
  }
  return { name, role, expiresIn: seconds };
}

/** `GET /admin/audit?limit=&after=` */
export function parseAuditQuery(raw: string): AuditQuery {
  const q = parseQuery(raw, ['limit', 'after']);
  const after = q.get('after');
  if (after !== undefined && (!/^[1-9]\d{0,15}$/.test(after) || !Number.isSafeInteger(Number(after)))) {
    throw new UpdaterError('INVALID_CURSOR', 'after must be the "next" value of a previous page');
  }
  return { limit: parseLimit(q.get('limit')), ...(after !== undefined ? { after: Number(after) } : {}) };
}

/** A token id in a path: 16 lowercase hex characters (anything else names no token). */
function tokenId(param: string | undefined): string {
  if (param === undefined || !/^[0-9a-f]{16}$/.test(param)) throw new UpdaterError('TOKEN_NOT_FOUND', `no operator token ${JSON.stringify((param ?? '').slice(0, 40))}`);
  return param;
}

export function registerOperatorRoutes(route: AdminRoute, ctx: ActorContext, auth: OperatorAuth): void {
  const fleet = <R>(fn: (f: Peer<OperatorsApi>) => Promise<R>) => {
    if (!ctx.config.fleet.enabled) throw new UpdaterError('FLEET_DISABLED', 'operator tokens and the audit log live in the fleet database (fleet.enabled: false)');
    return ctx.call('fleet', fn);
  };

  route('get', '/admin/whoami', 'admin_whoami', async (ex, _body, query) => {
    const { who } = query;
    sendJson(ex, 200, { token_id: who.id, token_name: who.name, role: who.role, expires_at: who.expiresAt, routes: routesOf(who.role) });
  });

  route('get', '/admin/tokens', 'admin_tokens', async (ex) => {
    sendJson(ex, 200, { tokens: await fleet((f) => f.listTokens()) });
  });

  route('post', '/admin/tokens', 'admin_token_create', async (ex, body, query) => {
    const request = parseTokenBody(await body!);
    const { id, token } = newOperatorToken();
    const createdAt = Math.floor(Date.now() / 1000);
    const entry = {
      id, name: request.name, role: request.role, hash: tokenHash(token),
      created_at: createdAt, expires_at: request.expiresIn === null ? null : createdAt + request.expiresIn,
    };
    const stored = await fleet((f) => f.createToken(entry));
    auth.added(entry);
    query.audit.detail = `created token ${id} (${entry.name}, ${entry.role}${entry.expires_at === null ? '' : `, expires ${entry.expires_at}`})`;
    ctx.log.info({ id, name: entry.name, role: entry.role }, 'admin: operator token created');
    sendJson(ex, 201, { id, name: stored.name, role: stored.role, token, expires_at: stored.expires_at });
  });

  route('del', '/admin/tokens/:id', 'admin_token_revoke', async (ex, _body, query) => {
    const id = tokenId(query.param);
    const revoked = await fleet((f) => f.revokeToken(id));
    if (!revoked) throw new UpdaterError('TOKEN_NOT_FOUND', `no operator token ${id}`);
    auth.removed(id);
    query.audit.detail = `revoked token ${id} (${revoked.name}, ${revoked.role})`;
    ctx.log.info({ id, name: revoked.name, role: revoked.role }, 'admin: operator token revoked');
    sendJson(ex, 200, revoked);
  });

  route('get', '/admin/audit', 'admin_audit', async (ex, _body, query) => {
    const request = parseAuditQuery(query.raw);
    const page = await fleet((f) => f.listAudit(request));
    sendJson(ex, 200, { entries: page.entries, next: page.next === null ? null : String(page.next) });
  });

  for (const [path, allow] of [['/admin/whoami', ['GET']], ['/admin/tokens', ['GET', 'POST']], ['/admin/tokens/:id', ['DELETE']], ['/admin/audit', ['GET']]] as const) {
    route('any', path, 'admin_other', async () => {
      throw methodNotAllowed(allow);
    });
  }
}
