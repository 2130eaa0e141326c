import type { StoreKeeperApi } from '../../messages/store.js';
import { collectMetrics, setLevel } from '../control.js';
import { runActor } from '../runtime.js';
import { createStoreMetrics } from './metrics.js';
import { ContentStore } from './store.js';


await runActor(async (ctx) => {
  const store = new ContentStore(ctx.config, ctx.log, createStoreMetrics(ctx.registry), async (event) => {
    // A manifester that is restarting (or not connected yet) resynchronizes from a snapshot,
    // so a lost event costs nothing; the deadline only bounds how long a removal waits.
    try {
      await ctx.call('manifester', (m) => m.storeEvent(event));
    } catch {
      // see above
    }
  });
  await store.open();
  return {
    registerBinary: (path) => store.registerBinary(path),
    ensureFull: (hash) => store.ensureFull(hash),
    ensureDelta: (from, to) => store.ensureDelta(from, to),
    snapshot: async () => store.snapshot(),
    condition: async () => store.condition(),
    locate: async (kind, to, from) => store.locate(kind, to, from),
    inventory: () => store.inventory(),
    remove: (request) => store.remove(request),
    metrics: () => collectMetrics(ctx),
    setLogLevel: (level) => setLevel(ctx, level),
    drain: () => store.drain(),
  } satisfies StoreKeeperApi;
});
