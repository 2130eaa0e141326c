import uWS from 'uWebSockets.js';
import type { ControlApi } from '../../messages/lifecycle.js';
import { UpdaterError } from '../../shared/errors.js';
import { collectMetrics, setLevel } from '../control.js';
import { fleetFeedFor } from '../fleet-feed.js';
import { runActor } from '../runtime.js';
import { registerAdminRoutes } from './admin-routes.js';
import { listenExclusive } from './listen.js';
import { createHttpMetrics } from './metrics.js';
import { exchange, sendError } from './respond.js';
import { registerDeviceRoutes } from './routes.js';

/** How long a drain lets open downloads finish before the listener goes away regardless. */
const DRAIN_DOWNLOADS_MS = 10_000;

await runActor(async (ctx) => {
  const { host, port } = ctx.config.listen.http;
  const app = uWS.App();
  const downloads = new Set<Promise<void>>();
  let draining = false;
  const metrics = createHttpMetrics(ctx.registry);
  const fleet = fleetFeedFor(ctx);
  registerDeviceRoutes(app, { ctx, metrics, downloads, fleet, isDraining: () => draining });
  registerAdminRoutes(app, { ctx, metrics, isDraining: () => draining });
  app.any('/*', (res) => sendError(exchange(res), new UpdaterError('NOT_FOUND')));

  const listenSocket = await listenExclusive(app, host, port);
  ctx.log.info({ host, port: uWS.us_socket_local_port(listenSocket) }, 'http listening');

  // uWS keeps native socket handles on this thread's event loop; a worker that ends with them
  // open aborts the whole process (CheckedUvLoopClose). So every way out closes them first.
  const closeAll = () => (app as unknown as { close(): void }).close();
  process.on('uncaughtException', (err) => {
    ctx.log.fatal({ err }, 'uncaught exception in the http front-end');
    closeAll();
    process.exit(1);
  });

  return {
    metrics: () => collectMetrics(ctx),
    setLogLevel: (level) => setLevel(ctx, level),
    async drain() {
      draining = true;
      uWS.us_listen_socket_close(listenSocket);
      const timeout = new Promise((resolve) => setTimeout(resolve, DRAIN_DOWNLOADS_MS).unref());
      await Promise.race([Promise.allSettled([...downloads]), timeout]);
      closeAll();
      fleet.flush();
    },
  } satisfies ControlApi;
});
