import type { WebhookState } from '../../../messages/webhooks.js';
import type { Role } from '../../../shared/admin-roles.js';
import { UpdaterError } from '../../../shared/errors.js';
import type { ActorContext } from '../../runtime.js';
import type { AdminRoute } from './route-types.js';
import { sendJson } from '../server/respond.js';

// GET /admin/webhooks: each configured webhook's delivery state, from the outbox the fleet
// actor keeps (docs/operations.md, "Webhooks"); the console's Webhooks page shows it.
//
// A webhook URL is often its own credential: a chat webhook's path (hooks.slack.com/services/
// T…/B…/secret, discord.com/api/webhooks/id/secret) or query (?token=…) lets anyone who reads
// it post into the channel. So only the roles that may change what the server does (operate,
// admin) see URLs whole; read and publish tokens see them redacted.

/** Roles that see webhook URLs as configured. */
const SEES_WEBHOOK_URLS: readonly Role[] = ['operate', 'admin'];
const MASK = '***';

// Kept: scheme, host and port, and the path's first segment. Masked (MASK): every later path
// segment, and the query and fragment whole. So https://hooks.slack.com/services/T000/B000/XXXX
// shows as https://hooks.slack.com/services/***/***/*** and https://x/y?token=abc as https://x/y?***.

export function redactWebhookUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return MASK;
  }
  const [first, ...rest] = url.pathname.split('/').filter((s) => s !== '');
  const path = first === undefined ? '/' : `/${[first, ...rest.map(() => MASK)].join('/')}`;
  return `${url.protocol}//${url.host}${path}${url.search !== '' ? `?${MASK}` : ''}${url.hash !== '' ? `#${MASK}` : ''}`;
}

export function redactedState(state: WebhookState): WebhookState {
  return {
    webhooks: state.webhooks.map((w) => ({ ...w, url: redactWebhookUrl(w.url) })),
    failures: state.failures.map((f) => ({ ...f, webhook: redactWebhookUrl(f.webhook) })),
  };
}

export function registerWebhookRoutes(route: AdminRoute, ctx: ActorContext): void {
  route('get', '/admin/webhooks', 'admin_webhooks', async (ex, _body, query) => {
    if (query.raw !== '') throw new UpdaterError('UNKNOWN_QUERY_PARAMETER', 'GET /admin/webhooks takes no query parameters');
    if (!ctx.config.fleet.enabled) throw new UpdaterError('FLEET_DISABLED');
    const role = query.who.role; // read before the await, like every field of the request
    const state = await ctx.call('fleet', (f) => f.webhookState());
    sendJson(ex, 200, SEES_WEBHOOK_URLS.includes(role) ? state : redactedState(state));
  });
}
