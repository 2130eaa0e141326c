import type { AnswerEncoding, EncodedAnswer, HeartbeatAnswers, ManifesterApi } from '../../messages/manifester.js';
import type { DecisionSnapshot } from '../../messages/decision-snapshot.js';
import type { TransferInfo } from '../../messages/store.js';
import { serializeError } from '../../shared/errors.js';
import { runActor, type OwnApi } from '../runtime.js';
import { BinaryWatcher } from './file-watch.js';
import { GenerationRequests } from './generation-requests.js';
import { Manifester } from './manifester.js';
import { createManifesterMetrics } from './metrics.js';
import { createReleaseMetrics } from './release-metrics.js';
import { ReleaseStatements } from './release-statements.js';
import { OfferFeed } from './rollout/offer-feed.js';
import { RolloutControl } from './rollout/rollout-control.js';
import { loadSigningKey } from './signing-key.js';
import { SignedManifests } from './signer.js';
import { signedAnswerKey } from '../../messages/decision-snapshot.js';
import { StoreView } from './store-view.js';
import { webhookEmitter } from './webhook-events.js';
import { TrackAdmin } from './track-admin.js';
import { TrackTable } from './tracks.js';
import type { ClusterSync } from './cluster/cluster-sync.js';
import { buildSnapshot } from './snapshot/build.js';
import { LongPollPublisher } from '../../shared/long-poll.js';
import { snapshotDeliveryHistogram } from './snapshot/metrics.js';

/** How often rollouts are checked: health counts, then steps that are due. */
const ROLLOUT_TICK_MS = 1000;

await runActor(async (ctx) => {
  const { config } = ctx;
  const key = await loadSigningKey(config, ctx.log);
  // The front-ends answer the steady state from a snapshot of what follows (snapshot/): every
  // part of it says when it changed.
  const snapshots = new LongPollPublisher<AnswerEncoding, DecisionSnapshot<EncodedAnswer[AnswerEncoding]>>(
    (version, encoding) => buildSnapshot(version, encoding, { manifester, tracks, view }), snapshotDeliveryHistogram(ctx.registry));
  const changed = () => snapshots.changed();
  const signed = new SignedManifests(key.privateKey, config.manifest.cacheSize, changed);
  const view = new StoreView((t: TransferInfo) => signed.forgetTransfer(t.from === undefined ? undefined : signedAnswerKey(t.from, t.format), t.to), changed);
  // Release statements are signed as the table changes and renewed by a timer, never on a heartbeat's path.
  const statements: ReleaseStatements = new ReleaseStatements(key.privateKey, Math.floor(config.signing.releaseTtlMs / 1000),
    createReleaseMetrics(ctx.registry, () => statements.size, key.certificate));
  const tracks = new TrackTable((all) => {
    statements.sync(all);
    changed();
  });
  const renewal = setInterval(() => {
    if (statements.renew() > 0) changed();
  }, statements.renewalPeriodMs);
  const requests = new GenerationRequests((run) => ctx.call('store-keeper', run), ctx.log);
  const metrics = createManifesterMetrics(ctx.registry, () => signed.size, () =>
    tracks.all().flatMap((t) => (t.rollout ? [{ artifact: t.key, percent: t.rollout.percent, state: t.rollout.state }] : [])));
  // Offers reach the fleet actor so that only the reports of devices offered a target count toward its rollout.
  const offers = config.fleet.enabled
    ? new OfferFeed((batch) => void ctx.call('fleet', (f) => f.recordOffers(batch)).catch((err) => ctx.log.warn({ err }, 'rollout offers not handed to the fleet actor')))
    : undefined;
  const manifester = new Manifester(config, ctx.log, tracks, view, signed, requests, metrics, statements, offers);

  const resync = async () => {
    view.beginResync();
    requests.forgetPending();
    view.applySnapshot(await ctx.call('store-keeper', (s) => s.snapshot()));
  };
  await resync();
  ctx.onPeerConnected((peer) => {
    if (peer !== 'store-keeper') return;
    resync().catch((err) => ctx.log.error({ err }, 'could not resynchronize with the restarted store-keeper'));
  });

  const watcher = new BinaryWatcher(config.store.watchSettleMs, (key) => {
    admin.reloadOne(key).catch((err) => ctx.log.warn({ err, artifact: key }, 'could not republish a watched binary; will try again on its next change'));
  }, ctx.log);
  // Cluster mode (database: postgres://…): the tracks live in the database (cluster/cluster-sync.ts).
  // Loaded only then: it brings Kysely, which a single node's manifester never uses.
  const cluster: ClusterSync | undefined = config.cluster
    ? await (await import('./cluster/cluster-sync.js')).startClusterSync(ctx, tracks, (keys): void => admin.trackChangedElsewhere(keys), (): Promise<void> => admin.sync())
    : undefined;
  const events = webhookEmitter(ctx);
  const admin = new TrackAdmin({
    config,
    log: ctx.log,
    tracks,
    signed,
    store: {
      registerBinary: (path, expected) => ctx.call('store-keeper', (s) => s.registerBinary(path, expected)),
      ensureFull: (hash) => requests.ensureFull(hash),
      holdsBinary: (hash) => view.binarySize(hash) !== undefined,
      adoptInBackground: (hash) => requests.adoptInBackground(hash),
      storedBinary: (hash) => ctx.call('store-keeper', (s) => s.adoptBinary(hash)),
    },
    onTracksChanged: (all) => watcher.sync(all),
    events: (event) => events.emit(event),
    ...(cluster ? { cluster: cluster.tracks } : {}),
    ...(config.fleet.enabled ? { groups: { names: () => ctx.call('fleet', (f) => f.groupNames()), delete: (name: string) => ctx.call('fleet', (f) => f.deleteGroup(name)) } } : {}),
  });
  // Configuration is authoritative for the tracks it names (docs/operations.md, "Configuration versus the API"): every boot republishes
  // them over what the state file restored. A corrupt state file throws STATE_CORRUPT here,
  // which fails the start.
  await admin.boot();
  cluster?.start();
  // Without the fleet inventory there are no report counts: rollouts step and obey commands, but never pause themselves.
  const health = config.fleet.enabled
    ? (queries: readonly { targetHash: string; sinceMs: number }[]) => ctx.call('fleet', (f) => f.rolloutHealth(queries))
    : undefined;
  const rollouts = new RolloutControl({ tracks, admin, log: ctx.log, health, tickMs: ROLLOUT_TICK_MS });
  rollouts.start();
  /** An operator's change returns once every front-end answers from it (snapshot/publisher.ts). */
  const settled = async <T>(change: Promise<T>): Promise<T> => {
    const outcome = await change;
    await snapshots.settled();
    return outcome;
  };

  return {
    heartbeats: async (batch, encoding) => {
      return answerAll(batch.deviceIds.length, (i) => manifester.encoded(manifester.heartbeat({
        deviceId: batch.deviceIds[i]!, versionHash: batch.versionHashes[i]!, artifact: batch.artifacts[i]!,
        ...(batch.formats?.[i] ? { deltaFormats: batch.formats[i]!.split(',') } : {}),
        ...(batch.routes?.[i] ? { route: batch.routes[i] as 'target' | 'stable' | 'stay' } : {}),
      }), encoding));
    },
    health: async () => ({ ...manifester.health(), ...(cluster ? { database: cluster.tracks.condition } : {}) }),
    references: async () => ({
      // A rollout's stable target is still answered to devices: its files stay current.
      current: tracks.all().flatMap((t) => (t.rollout?.stable && t.rollout.stable.hash !== t.hash ? [t.hash, t.rollout.stable.hash] : [t.hash])),
      history: tracks.all().flatMap((t) => t.history),
    }),
    // A removal is acknowledged once no front-end offers the file any more: the store-keeper waits for it before deleting.
    storeEvent: (event) => {
      view.apply(event);
      return event.type === 'binary-removed' || event.type === 'transfer-removed' ? snapshots.settled() : undefined;
    },
    decisionSnapshot: (poller, known, encoding) => snapshots.poll(poller, known, encoding) as never,
    signingCertificate: async () => key.certificate ?? null,
    listTracks: async () => admin.list(),
    publishTrack: async (request) => settled(admin.publish(request)),
    deleteTrack: async (artifact) => settled(admin.remove(artifact)),
    setDefaultTrack: async (artifact) => settled(admin.setDefault(artifact)),
    reloadTracks: async (artifact) => settled(admin.reload(artifact)),
    controlRollout: async (command) => settled(rollouts.command(command)),
    rolloutOf: async (artifact) => rollouts.view(artifact),
    deleteGroup: async (name) => admin.deleteGroup(name),
    drain: async () => {
      clearInterval(renewal);
      snapshots.stop();
      offers?.flush();
      await rollouts.stop();
      await watcher.close();
      await cluster?.close();
    },
  } satisfies OwnApi<ManifesterApi>;
});

/** The answers of a batch: a decision that throws travels as data beside the other answers. */
function answerAll<T>(count: number, answer: (i: number) => T): HeartbeatAnswers<T> {
  const bodies = new Array<T | null>(count);
  const errors: { at: number; error: ReturnType<typeof serializeError> }[] = [];
  for (let i = 0; i < count; i++) {
    try {
      bodies[i] = answer(i);
    } catch (err) {
      bodies[i] = null;
      errors.push({ at: i, error: serializeError(err) });
    }
  }
  return { bodies, errors };
}
