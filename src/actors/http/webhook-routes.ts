import { UpdaterError } from '../../shared/errors.js';
import type { ActorContext } from '../runtime.js';
import type { AdminRoute } from './admin-route.js';
import { sendJson } from './respond.js';

// GET /admin/webhooks: each configured webhook's delivery state, from the outbox the fleet
// actor keeps (docs/operations.md, "Webhooks"); the console's Webhooks page shows it.

export function registerWebhookRoutes(route: AdminRoute, ctx: ActorContext): void {
  route('get', '/admin/webhooks', 'admin_webhooks', async (ex, _body, query) => {
    if (query.raw !== '') throw new UpdaterError('UNKNOWN_QUERY_PARAMETER', 'GET /admin/webhooks takes no query parameters');
    if (!ctx.config.fleet.enabled) throw new UpdaterError('FLEET_DISABLED');
    sendJson(ex, 200, await ctx.call('fleet', (f) => f.webhookState()));
  });
}
