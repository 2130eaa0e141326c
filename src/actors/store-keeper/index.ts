import type { ManifesterApi } from '../../messages/manifester.js';
import type { StoreKeeperApi } from '../../messages/store.js';
import { collectMetrics, setLevel } from '../control.js';
import { runActor } from '../runtime.js';
import { createStoreMetrics } from './metrics.js';
import { ContentStore } from './store.js';

await runActor(async (ctx) => {
  const store = new ContentStore(ctx.config, ctx.log, createStoreMetrics(ctx.registry), (event) => {
    // Fire and forget: a manifester that is restarting resynchronizes from a snapshot.
    try {
      void ctx.peer<ManifesterApi>('manifester').storeEvent(event).catch(() => undefined);
    } catch {
      // not connected yet
    }
  });
  await store.open();
  return {
    registerBinary: (path) => store.registerBinary(path),
    ensureFull: (hash) => store.ensureFull(hash),
    ensureDelta: (from, to) => store.ensureDelta(from, to),
    snapshot: async () => store.snapshot(),
    locate: async (kind, to, from) => store.locate(kind, to, from),
    metrics: () => collectMetrics(ctx),
    setLogLevel: (level) => setLevel(ctx, level),
    drain: () => store.drain(),
  } satisfies StoreKeeperApi;
});
