import type { StoreKeeperApi } from '../../messages/store.js';
import { runActor, type OwnApi } from '../runtime.js';
import { createStoreMetrics } from './metrics.js';
import { ContentStore } from './store.js';
import { ClusterFiles } from './cluster-files.js';

await runActor(async (ctx) => {
  // Cluster mode: one connection per generation that may hold a lock, and two for removal
  // announcements and lock attempts (documented with store.delta_concurrency in the schema).
  const cluster = ctx.config.cluster
    ? new ClusterFiles(ctx.config.database, ctx.config.store.deltaConcurrency + 2, ctx.log, (files) => {
      store.removedElsewhere(files).catch((err) => ctx.log.warn({ err }, 'could not drop files another replica removed from the index'));
    })
    : undefined;
  const store = new ContentStore(ctx.config, ctx.log, createStoreMetrics(ctx.registry), async (event) => {
    // A manifester that is restarting (or not connected yet) resynchronizes from a snapshot,
    // so a lost event costs nothing; the deadline only bounds how long a removal waits.
    try {
      await ctx.call('manifester', (m) => m.storeEvent(event));
    } catch {
      // see above
    }
  }, undefined, cluster);
  await store.open();
  cluster?.start();
  return {
    registerBinary: (path, expected) => store.registerBinary(path, expected),
    ensureFull: (hash) => store.ensureFull(hash),
    ensureDelta: (from, to, format) => store.ensureDelta(from, to, format),
    adoptBinary: (hash) => store.adoptBinary(hash),
    snapshot: async () => store.snapshot(),
    condition: async () => store.condition(),
    locate: (kind, to, from, format) => store.locate(kind, to, from, format),
    inventory: () => store.inventory(),
    remove: (request) => store.remove(request),
    beginUpload: () => store.beginUpload(),
    adoptUpload: (id, claimed) => store.adoptUpload(id, claimed),
    abandonUpload: (id, end) => store.abandonUpload(id, end),
    drain: () => store.drain(),
  } satisfies OwnApi<StoreKeeperApi>;
});
