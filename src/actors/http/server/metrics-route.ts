import type { TemplatedApp } from 'uWebSockets.js';
import type { ActorContext } from '../../runtime.js';
import type { HttpMetrics } from './metrics.js';
import { exchange, send, sendError, type Exchange } from './respond.js';

// GET /metrics: the Prometheus text of every actor, merged by the supervisor. It names tracks,
// the version hashes devices run and rollout state, so `metrics.listener: admin` serves it on
// the admin listener only (docs/operations.md, "Metrics on the admin listener"); `public`, the
// default, on the device listeners (routes.ts), as before.

export async function sendMetrics(ex: Exchange, ctx: ActorContext): Promise<void> {
  const text = await ctx.call('supervisor', (s) => s.metricsText());
  send(ex, 200, text, {}, 'text/plain; version=0.0.4; charset=utf-8');
}

/** `metrics.listener: admin`: /metrics on the admin listener's apps, with no token (a scraper's address is what the listener's bind limits). */
export function registerAdminMetrics(apps: readonly TemplatedApp[], ctx: ActorContext, metrics: HttpMetrics): void {
  for (const app of apps) {
    app.get('/metrics', (res) => {
      const ex = exchange(res);
      const stop = metrics.startRequest('metrics');
      sendMetrics(ex, ctx).then(
        () => stop(ex.status ?? 499),
        (err) => {
          sendError(ex, err);
          stop(ex.status ?? 499);
        },
      );
    });
  }
}
