import uWS from 'uWebSockets.js';
import type { ControlApi } from '../../messages/lifecycle.js';
import { UpdaterError } from '../../shared/errors.js';
import { fleetFeedFor } from '../front-ends/fleet-feed.js';
import { deviceGateFor } from '../front-ends/device-gate.js';
import { runActor, type OwnApi } from '../runtime.js';
import { registerAdminRoutes } from './admin/routes.js';
import { listenExclusive, planListeners } from './server/listeners.js';
import { CertifiedForwarding, startCertificateFront, type CertificateFront } from './device/client-certificates.js';
import { loadConsoleAssets, registerConsoleRoutes } from './admin/console.js';
import { createHttpMetrics } from './server/metrics.js';
import { registerAdminMetrics } from './server/metrics-route.js';
import { exchange, sendError } from './server/respond.js';
import { writeHeldAnswers } from './server/turn-end-answers.js';
import { registerDeviceRoutes } from './device/routes.js';
import { TransferLocator } from '../front-ends/transfer-locator.js';
import { heartbeatAnswers } from '../front-ends/heartbeat-answers.js';

/** How long a drain lets open downloads finish before the listener goes away regardless. */
const DRAIN_DOWNLOADS_MS = 10_000;

await runActor(async (ctx) => {
  const listeners = planListeners(ctx.config);
  const downloads = new Set<Promise<void>>();
  let draining = false;
  const metrics = createHttpMetrics(ctx.registry);
  const fleet = fleetFeedFor(ctx);
  const gate = await deviceGateFor(ctx);
  const forwarding = listeners.some((l) => l.certified) ? new CertifiedForwarding() : undefined;
  const deviceApps = listeners.filter((l) => l.servesDevices).map((l) => ({ app: l.app, certifiedId: l.certified ? forwarding?.certifiedId.bind(forwarding) : undefined }));
  const heartbeats = heartbeatAnswers(ctx, 'json');
  registerDeviceRoutes(deviceApps, { ctx, metrics, downloads, fleet, gate, heartbeats, transfers: TransferLocator.of(ctx), isDraining: () => draining });
  const admin = registerAdminRoutes(listeners.filter((l) => l.servesAdmin).map((l) => l.app), { ctx, metrics, isDraining: () => draining });
  // The console goes where the admin API is: listen.admin when set, else the device listeners.
  registerConsoleRoutes(listeners.filter((l) => l.servesAdmin).map((l) => l.app), { assets: await loadConsoleAssets(), metrics, log: ctx.log });
  if (ctx.config.metrics.listener === 'admin') registerAdminMetrics(listeners.filter((l) => l.name === 'admin').map((l) => l.app), ctx, metrics);
  for (const { app } of listeners) app.any('/*', (res) => sendError(exchange(res), new UpdaterError('NOT_FOUND')));

  // uWS keeps native socket handles on this thread's event loop; a worker that ends with them
  // open aborts the whole process (CheckedUvLoopClose). So every way out closes them first.
  let front: CertificateFront | undefined;
  const closeAll = () => {
    front?.close();
    for (const { app } of listeners) (app as unknown as { close(): void }).close();
  };
  const sockets: uWS.us_listen_socket[] = [];
  try {
    for (const listener of listeners) {
      const socket = await listenExclusive(listener);
      sockets.push(socket);
      const port = uWS.us_socket_local_port(socket);
      ctx.log.info({ listener: listener.name, host: listener.host, port, ...(listener.certified ? { behind: 'client certificates' } : {}) }, `${listener.name} listening`);
      if (listener.certified) {
        front = await startCertificateFront(ctx.config, forwarding!, port, ctx.log);
        ctx.log.info({ listener: 'https', host: ctx.config.listen.https!.host, port: front.port, client_certificates: true }, 'https listening with device certificates');
      }
    }
  } catch (err) {
    closeAll();
    throw err;
  }
  process.on('uncaughtException', (err) => {
    ctx.log.fatal({ err }, 'uncaught exception in the http front-end');
    closeAll();
    process.exit(1);
  });

  return {
    async drain() {
      draining = true;
      gate.stop();
      heartbeats.stop();
      for (const socket of sockets) uWS.us_listen_socket_close(socket);
      front?.stopListening();
      const timeout = new Promise((resolve) => setTimeout(resolve, DRAIN_DOWNLOADS_MS).unref());
      await Promise.race([Promise.allSettled([...downloads]), timeout]);
      // Answers decided in this turn are still held (turn-end-answers.ts): out before the sockets close.
      writeHeldAnswers();
      closeAll();
      admin.flushAudit();
      fleet.flush();
    },
  } satisfies OwnApi<ControlApi>;
});
