import type { ManifesterApi } from '../../messages/manifester.js';
import type { StoreKeeperApi, TransferInfo } from '../../messages/store.js';
import { serializeError } from '../../shared/errors.js';
import { readPrivateKeyFile } from '../../shared/signing.js';
import { collectMetrics, setLevel } from '../control.js';
import { runActor, type ActorContext } from '../runtime.js';
import { Manifester, type StoreRequests } from './manifester.js';
import { createManifesterMetrics } from './metrics.js';
import { SignedManifests } from './signer.js';
import { StoreView } from './store-view.js';
import { TrackTable } from './tracks.js';

/** A delta generation can take minutes; this only bounds how long a lost request is remembered. */
const GENERATION_DEADLINE_MS = 60 * 60_000;
const SNAPSHOT_DEADLINE_MS = 60_000;
/** Registering a configured binary streams it into the store; large images take a while. */
const REGISTER_DEADLINE_MS = 10 * 60_000;

await runActor(async (ctx) => {
  const { config } = ctx;
  const signed = new SignedManifests(await readPrivateKeyFile(config.signing.privateKeyFile), config.manifest.cacheSize);
  const view = new StoreView((t: TransferInfo) => signed.forgetTransfer(t.from, t.to));
  const tracks = new TrackTable();
  const requests = storeRequests(ctx);
  const metrics = createManifesterMetrics(ctx.registry, () => signed.size);
  const manifester = new Manifester(config, ctx.log, tracks, view, signed, requests, metrics);

  const resync = async () => {
    view.beginResync();
    requests.forgetPending();
    view.applySnapshot(await ctx.call<StoreKeeperApi, Awaited<ReturnType<StoreKeeperApi['snapshot']>>>('store-keeper', (s) => s.snapshot(), SNAPSHOT_DEADLINE_MS));
  };
  await resync();
  ctx.onPeerConnected((peer) => {
    if (peer !== 'store-keeper') return;
    resync().catch((err) => ctx.log.error({ err }, 'could not resynchronize with the restarted store-keeper'));
  });

  // Configuration is authoritative for the tracks it names (spec 3.2): every boot republishes them.
  for (const artifact of config.artifacts) {
    const binary = await ctx.call<StoreKeeperApi, { hash: string; size: number }>('store-keeper', (s) => s.registerBinary(artifact.binary), REGISTER_DEADLINE_MS);
    const { track } = tracks.publish({ ...artifact, ...binary, source: 'config' }, config.retention.historyDepth);
    requests.ensureFull(track.hash);
    ctx.log.info({ artifact: track.key, version: track.version, hash: track.hash, size: track.size }, 'track current');
  }
  if (config.defaultArtifact && tracks.get(config.defaultArtifact)) tracks.setDefault(config.defaultArtifact);
  tracks.inferDefault();

  return {
    heartbeat: async (request) => manifester.heartbeat(request),
    heartbeats: async (batch) => batch.map((request) => {
      try {
        return { manifest: manifester.heartbeat(request) };
      } catch (err) {
        return { error: serializeError(err) };
      }
    }),
    health: async () => manifester.health(),
    storeEvent: (event) => view.apply(event),
    metrics: () => collectMetrics(ctx),
    setLogLevel: (level) => setLevel(ctx, level),
    drain: async () => undefined,
  } satisfies ManifesterApi;
});

/** Asks the store for missing files once per file, however many heartbeats want it. */
function storeRequests(ctx: ActorContext): StoreRequests & { forgetPending(): void } {
  const pending = new Set<string>();
  const ask = (key: string, run: (store: StoreKeeperApi) => Promise<unknown>) => {
    if (pending.has(key)) return;
    pending.add(key);
    ctx.call<StoreKeeperApi, unknown>('store-keeper', (s) => run(s as unknown as StoreKeeperApi), GENERATION_DEADLINE_MS)
      .catch((err) => ctx.log.warn({ err, file: key }, 'store could not produce a derived file'))
      .finally(() => pending.delete(key));
  };
  return {
    ensureDelta: (from, to) => ask(`${from}_${to}`, (s) => s.ensureDelta(from, to)),
    ensureFull: (hash) => ask(hash, (s) => s.ensureFull(hash)),
    forgetPending: () => pending.clear(),
  };
}
