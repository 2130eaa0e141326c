import { stat } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import type { PublishOutcome, PublishRequest, ReloadOutcome, RolloutView, TrackListing, TrackView } from '../../messages/manifester.js';
import type { BinaryInfo } from '../../messages/store.js';
import { makeTrackId, parseTrackKey, trackKey } from '../../shared/artifact-key.js';
import type { Config } from '../../shared/config/types.js';
import { storeWriteError } from '../../shared/durable-file.js';
import { UpdaterError, isUpdaterError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { RolloutPlan } from '../../shared/rollout-plan.js';
import { isActive, replaced, rolloutView, startRollout, successorBasis, type Rollout } from './rollout.js';
import { KeyedQueues, SerialQueue } from './serial.js';
import type { SignedManifests } from './signer.js';
import { bootClusterTracks } from './cluster-boot.js';
import type { ClusterTracks } from './cluster-tracks.js';
import { checkPublishPath } from './publish-paths.js';
import { assertSha256Hex } from '../../shared/hash.js';
import { binaryName, storeLayout } from '../../shared/store-layout.js';
import type { WebhookEvent } from '../../shared/webhooks/events.js';
import { publishEvents, removedEvent, rolloutEvent } from './track-events.js';
import { readState, sameState, writeState, type PersistedState } from './state-file.js';
import type { Track, TrackTable } from './tracks.js';

// The track lifecycle of spec 3.2, for configuration at boot and for the admin API after:
//
//   publish ─▶ stream the file into the store (durable) ─▶ table + state file ─▶ Current
//   identical bytes and version                          ─▶ nothing at all (no-op)
//   a new target                                         ─▶ the old one goes into history
//   a new target with a rollout                          ─▶ rolled out in stages (rollout.ts);
//                                                           a rollout under way is replaced
//   delete                                               ─▶ gone from the table; bytes stay
//
// A track is recorded only once its binary is durable in the store, and the table changes
// only once the state file records it, so a crash at any point leaves the old target or the
// new one, never a track whose binary is missing.

export interface StoreAccess {
  /** Streams the file into the store; durable when it resolves. */
  registerBinary(path: string): Promise<BinaryInfo>;
  /** Asks for the compressed full file in the background. */
  ensureFull(hash: string): void;
  /** Whether the store (as the manifester's replica knows it) holds the binary. */
  holdsBinary(hash: string): boolean;
  /** Cluster mode: has the store index a binary another replica wrote (in the background). */
  adoptBinary(hash: string): void;
  /** A binary the store holds (an upload, on any replica), checked and indexed; BINARY_NOT_FOUND otherwise. */
  storedBinary(hash: string): Promise<BinaryInfo>;
}

export interface TrackAdminDeps {
  readonly config: Config;
  readonly log: Logger;
  readonly tracks: TrackTable;
  readonly signed: SignedManifests;
  readonly store: StoreAccess;
  /** Told whenever the set of (track, file) pairs changes, to watch the right files. */
  readonly onTracksChanged: (tracks: readonly Track[]) => void;
  /** Set in cluster mode (database: postgres://…): the tracks live in the database, not the state file. */
  readonly cluster?: ClusterTracks;
  /** Told of each change a webhook may announce, once it is recorded (track-events.ts). */
  readonly events?: (event: WebhookEvent) => void;
}

type Source = Track['source'];

export class TrackAdmin {
  private readonly perTrack = new KeyedQueues();
  private readonly tableLock = new SerialQueue();
  private readonly configKeys: ReadonlySet<string>;
  private readonly configDefault: string;

  constructor(private readonly deps: TrackAdminDeps) {
    this.configKeys = new Set(deps.config.artifacts.map((a) => a.key));
    this.configDefault = deps.config.defaultArtifact ?? '';
  }

  /**
   * Boot: restore what the state file records, then republish every configured track
   * (configuration wins for the tracks it names), then record the result.
   */
  async boot(): Promise<void> {
    if (this.deps.cluster) return this.bootCluster(this.deps.cluster);
    const { config, log, tracks } = this.deps;
    const depth = config.retention.historyDepth;
    const saved = config.store.stateFile ? await readState(config.store.stateFile) : undefined;
    for (const track of saved?.tracks ?? []) {
      if (track.source === 'config' && !this.configKeys.has(track.key)) {
        log.info({ artifact: track.key }, 'track was declared by a configuration that no longer names it; dropped');
        continue;
      }
      // A configured track is republished from its file just below; an API track has only the
      // store to come back from, so its binary must be there.
      // If it is not (lost, or moved aside at start because its bytes did not fit its name),
      // the track stays listed and devices get retry_after, never a wrong file, until the
      // operator publishes it again.
      if (track.source === 'api' && !this.deps.store.holdsBinary(track.hash)) {
        log.error({ artifact: track.key, hash: track.hash }, 'store.state_file records a track whose binary the store does not hold; publish it again');
      }
      tracks.restore({ ...track, history: track.history.slice(0, depth) });
    }
    for (const artifact of config.artifacts) {
      const recorded = tracks.get(artifact.key);
      let binary: BinaryInfo;
      try {
        binary = await this.deps.store.registerBinary(artifact.binary);
      } catch (err) {
        // A full or read-only store must not take device service down: serve what it holds.
        if (!storeCannotWrite(err)) throw err;
        log.error({ err, artifact: artifact.key, binary: artifact.binary, serving: recorded?.hash ?? null },
          'configured binary cannot be stored; the track serves what the state file recorded, if anything, until a reload after the store recovers');
        continue;
      }
      const { track, changed } = tracks.publish({ ...artifact, ...binary, source: 'config' }, depth);
      if (changed && recorded && recorded.hash !== track.hash) {
        // Typically a build published through the API onto this configured track: the rule
        // (configuration wins) stands, but devices may now be offered an older build.
        log.warn({ artifact: track.key, replaced: { version: recorded.version, hash: recorded.hash }, by: { version: track.version, hash: track.hash } },
          `configuration replaces the recorded target of ${track.key}: version ${recorded.version} gives way to the configured ${track.version} (an API publish onto a configured track lasts until the next start)`);
      } else if (changed) {
        log.info({ artifact: track.key, version: track.version, hash: track.hash }, 'configured track republished with a new target');
      }
    }
    tracks.setDefault(this.bootDefault(saved));
    tracks.inferDefault();
    // Rewritten only when it changed: a start on a full or read-only disk needs no write.
    const now: PersistedState = { default: tracks.default ?? '', configDefault: this.configDefault, tracks: tracks.all() };
    if (!saved || !sameState(saved, now)) {
      try {
        await this.persist();
      } catch (err) {
        // Configuration is republished at every boot, so what a restart brings back is this table.
        if (!storeCannotWrite(err)) throw err;
        log.error({ err }, 'store.state_file cannot be written; serving the configured tracks read-only');
      }
    }
    for (const track of tracks.all()) {
      this.deps.store.ensureFull(track.hash);
      log.info({ artifact: track.key, version: track.version, hash: track.hash, size: track.size, source: track.source }, 'track current');
    }
    this.deps.onTracksChanged(tracks.all());
  }

  /** Boot of a cluster replica (cluster-boot.ts): the database's tracks, then configuration over them. */
  private bootCluster(cluster: ClusterTracks): Promise<void> {
    return bootClusterTracks({
      ...this.deps,
      cluster,
      configKeys: this.configKeys,
      sync: () => this.sync(true),
      changeTable: (change) => this.changeTable(change),
      bootDefault: (saved) => this.bootDefault({ ...saved, tracks: [] }),
    });
  }

  /** Cluster mode: brings the table to what the database holds (a notification, the resync timer, a reconnect). */
  sync(force = false): Promise<void> {
    const cluster = this.deps.cluster;
    if (!cluster) return Promise.resolve();
    return this.tableLock.run(() => cluster.refresh(force));
  }

  /** Cluster mode: another replica changed these tracks; what this replica derived from them goes. */
  trackChangedElsewhere(keys: readonly string[]): void {
    const { tracks, signed, store, log } = this.deps;
    for (const key of keys) {
      signed.forgetArtifact(key);
      const track = tracks.get(key);
      log.info({ artifact: key, hash: track?.hash ?? null }, track ? 'track changed on another replica' : 'track deleted on another replica');
      if (!track) continue;
      const hashes = [track.hash, ...(track.rollout?.stable ? [track.rollout.stable.hash] : []), ...track.history];
      for (const hash of hashes) if (!store.holdsBinary(hash)) store.adoptBinary(hash);
      store.ensureFull(track.hash);
    }
    this.deps.onTracksChanged(tracks.all());
  }

  list(): TrackListing {
    return { default: this.deps.tracks.default ?? '', artifacts: this.deps.tracks.all().map(toView) };
  }

  publish(request: PublishRequest): Promise<PublishOutcome> {
    const id = makeTrackId(request.name, request.os, request.arch);
    const key = trackKey(id);
    if (typeof request.version !== 'string' || request.version === '') throw new UpdaterError('INVALID_FIELD', 'version must be a non-empty string');
    // A configured track may be republished through the API; configuration takes it back at the next boot.
    const source: Source = this.configKeys.has(key) ? 'config' : 'api';
    if (request.hash !== undefined) {
      // An upload (PUT /admin/binaries): the store holds the bytes; the track records where.
      const hash = assertSha256Hex(request.hash, 'hash');
      const binary = join(storeLayout(this.deps.config.store.dir).binaries, binaryName(hash));
      return this.perTrack.run(key, async () => this.publishNow({ ...id, key, version: request.version, binary, source }, request.rollout, await this.deps.store.storedBinary(hash)));
    }
    if (typeof request.binary !== 'string' || !isAbsolute(request.binary)) throw new UpdaterError('INVALID_FIELD', 'binary must be an absolute server-side path');
    const binary = request.binary;
    return this.perTrack.run(key, () => this.publishNow({ ...id, key, version: request.version, binary, source }, request.rollout));
  }

  /**
   * Changes a track's rollout with a pure step of rollout.ts and records it. A step that
   * changes nothing writes nothing. ROLLOUT_NOT_FOUND for a track without a rollout.
   */
  updateRollout(key: string, step: (rollout: Rollout) => Rollout): Promise<RolloutView> {
    const rolloutOf = () => {
      const track = this.deps.tracks.get(key);
      if (!track) throw new UpdaterError('ARTIFACT_NOT_FOUND', `no track ${key}`, { artifact: key });
      if (!track.rollout) throw new UpdaterError('ROLLOUT_NOT_FOUND', `track ${key} has no rollout`, { artifact: key });
      return track.rollout;
    };
    return this.perTrack.run(key, async () => {
      // A step that changes nothing here writes nothing (every replica ticks every rollout).
      const local = rolloutOf();
      if (step(local) === local) return rolloutView(local);
      // In a cluster, only the replica whose change reaches the database sees before ≠ next:
      // the event is told once per cluster, and only once the change is recorded.
      let change: { before: Rollout; next: Rollout } | undefined;
      const view = await this.changeTable(() => {
        const { tracks, signed, log } = this.deps;
        // In a cluster the table was just brought to the database: step from what it holds.
        const before = rolloutOf();
        const next = step(before);
        if (next === before) return rolloutView(before);
        tracks.restore({ ...tracks.get(key)!, rollout: next });
        // Manifests are cached by (track, from, to), so a new cohort needs nothing; a new stable
        // target or a rollback leaves entries no device is routed to any more: drop them.
        if (next.stable?.hash !== before.stable?.hash || next.rollback !== before.rollback) signed.forgetArtifact(key);
        if (next.state !== before.state || next.percent !== before.percent) {
          log.info({ artifact: key, target: next.target.hash, state: next.state, percent: next.percent, paused_reason: next.pausedReason, rollback: next.rollback, reports: next.reports }, 'rollout changed');
        }
        change = { before, next };
        return rolloutView(next);
      });
      const event = change && rolloutEvent(key, change.before, change.next, Date.now());
      if (event) this.deps.events?.(event);
      return view;
    });
  }

  remove(artifact: string): Promise<TrackView> {
    const key = trackKey(parseTrackKey(artifact));
    return this.perTrack.run(key, async () => {
      const view = await this.removeNow(key);
      this.deps.events?.(removedEvent(view, Date.now()));
      return view;
    });
  }

  private removeNow(key: string): Promise<TrackView> {
    return this.changeTable(() => {
      const { tracks, signed } = this.deps;
      const track = tracks.get(key);
      if (!track) throw new UpdaterError('ARTIFACT_NOT_FOUND', `no track ${key}`, { artifact: key });
      tracks.remove(key);
      tracks.inferDefault();
      signed.forgetArtifact(key);
      this.deps.log.info({ artifact: key, hash: track.hash }, 'track deleted; its bytes stay in the store until retention runs');
      return toView(track);
    });
  }

  setDefault(artifact: string): Promise<{ default: string }> {
    const key = trackKey(parseTrackKey(artifact));
    return this.changeTable(() => {
      if (!this.deps.tracks.get(key)) throw new UpdaterError('ARTIFACT_NOT_FOUND', `no track ${key}`, { artifact: key });
      this.deps.tracks.setDefault(key);
      this.deps.log.info({ artifact: key }, 'default track changed');
      return { default: key };
    });
  }

  /**
   * Re-reads the file of one track, or of every track. A targeted reload touches that track
   * alone (the per-component pipeline of spec 4.2). A reload of everything goes on past a
   * file that cannot be read and lists it.
   */
  async reload(artifact?: string): Promise<ReloadOutcome> {
    const outcome: ReloadOutcome = { reloaded: [], changed: [], failed: [] };
    if (artifact !== undefined) {
      const key = trackKey(parseTrackKey(artifact));
      if (!this.deps.tracks.get(key)) throw new UpdaterError('ARTIFACT_NOT_FOUND', `no track ${key}`, { artifact: key });
      const result = await this.reloadOne(key);
      if (result) {
        outcome.reloaded.push(key);
        if (result.changed) outcome.changed.push(key);
      }
      return outcome;
    }
    // One after another: a reload of everything should not read every binary at once.
    for (const track of this.deps.tracks.all()) {
      try {
        const result = await this.reloadOne(track.key);
        if (!result) continue;
        outcome.reloaded.push(track.key);
        if (result.changed) outcome.changed.push(track.key);
      } catch (err) {
        if (!isUpdaterError(err)) throw err;
        outcome.failed.push({ artifact: track.key, code: err.code, message: err.message });
      }
    }
    return outcome;
  }

  /** Republishes a track from its recorded file; undefined when it was deleted meanwhile. */
  reloadOne(key: string): Promise<PublishOutcome | undefined> {
    return this.perTrack.run(key, async () => {
      const track = this.deps.tracks.get(key);
      if (!track) return undefined;
      // An uploaded binary lives in the store, immutable: there is nothing to re-read.
      const uploaded = dirname(track.binary) === storeLayout(this.deps.config.store.dir).binaries ? { hash: track.hash, size: track.size } : undefined;
      return this.publishNow({ key, name: track.name, os: track.os, arch: track.arch, version: track.version, binary: track.binary, source: track.source }, undefined, uploaded);
    });
  }

  /** `stored`: the binary is already in the store (an upload); otherwise `next.binary` is read into it. */
  private async publishNow(next: Omit<Track, 'hash' | 'size' | 'history' | 'rollout'>, plan?: RolloutPlan, stored?: BinaryInfo): Promise<PublishOutcome> {
    const binary = stored ?? await this.storeFile(next.key, next.binary);
    let published: Track | undefined;
    const outcome = await this.changeTable(() => {
      const { tracks, signed, log, config } = this.deps;
      const before = tracks.get(next.key);
      if (before && before.hash === binary.hash && before.version === next.version && before.binary === next.binary && before.source === next.source) {
        return { ...toView(before), changed: false };
      }
      const rollout = before?.hash === binary.hash ? undefined : this.newRollout(before, { hash: binary.hash, version: next.version, size: binary.size }, plan);
      const { track, changed } = tracks.publish({ ...next, ...binary, ...(rollout ? { rollout } : {}) }, config.retention.historyDepth);
      tracks.inferDefault();
      // Cached manifests carry the target and its version label: both may have changed.
      if (changed || before?.version !== track.version) signed.forgetArtifact(track.key);
      if (changed) {
        this.deps.store.ensureFull(track.hash);
        log.info({ artifact: track.key, version: track.version, hash: track.hash, size: track.size, previous: before?.hash }, 'track published');
        published = track;
      }
      return { ...toView(track), changed };
    });
    if (published) for (const event of publishEvents(published, Date.now())) this.deps.events?.(event);
    return outcome;
  }

  private async storeFile(key: string, path: string): Promise<BinaryInfo> {
    // A path the configuration names is the operator's own; any other came through the API.
    const configured = this.deps.config.artifacts.find((a) => a.key === key)?.binary;
    const readPath = path === configured ? path : await checkPublishPath(path, this.deps.config);
    await assertRegularFile(readPath);
    return this.deps.store.registerBinary(readPath);
  }

  /** The rollout a new target starts, if any; a rollout under way on the track is replaced (aborted). */
  private newRollout(before: Track | undefined, target: { hash: string; version: string; size: number }, plan: RolloutPlan | undefined): Rollout | undefined {
    if (before?.rollout && isActive(before.rollout)) {
      this.deps.log.warn({ artifact: before.key, target: before.rollout.target.hash, state: before.rollout.state, by: target.hash }, 'a new publish replaces the rollout under way; it is aborted');
    }
    if (!plan) return undefined;
    const basis = before ? successorBasis({ ...before, ...(before.rollout ? { rollout: replaced(before.rollout) } : {}) }) : { stable: null, held: [] };
    return startRollout(plan, target, basis, Date.now());
  }

  /**
   * Applies a change to the table and records it in the state file, under the table lock.
   * If the file cannot be written, the table is put back and the caller gets the error:
   * what answers devices never differs from what a restart would bring back.
   */
  private changeTable<T>(change: () => T): Promise<T> {
    const cluster = this.deps.cluster;
    if (cluster) {
      return this.tableLock.run(async () => {
        const result = await cluster.change(change);
        this.deps.onTracksChanged(this.deps.tracks.all());
        return result;
      });
    }
    return this.tableLock.run(async () => {
      const { tracks } = this.deps;
      const before = { tracks: tracks.all(), default: tracks.default };
      const result = change();
      try {
        await this.persist();
      } catch (err) {
        tracks.replaceAll(before.tracks, before.default);
        throw err;
      }
      this.deps.onTracksChanged(tracks.all());
      return result;
    });
  }

  private async persist(): Promise<void> {
    const path = this.deps.config.store.stateFile;
    if (!path) return;
    const state: PersistedState = { default: this.deps.tracks.default ?? '', configDefault: this.configDefault, tracks: this.deps.tracks.all() };
    try {
      await writeState(path, state);
    } catch (err) {
      this.deps.log.error({ err, path }, 'could not write store.state_file');
      const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      const mapped = storeWriteError(err, `store.state_file ${path}`);
      if (storeCannotWrite(mapped)) throw new UpdaterError((mapped as UpdaterError).code, `store.state_file ${path} could not be written (${reason}); the change was not applied`);
      throw new UpdaterError('STATE_WRITE_FAILED', `store.state_file ${path} could not be written (${reason}); the change was not applied`);
    }
  }

  /**
   * The default at boot: the one the state file records, unless the configuration now names
   * another default than when the file was written (the operator edited it: it wins).
   */
  private bootDefault(saved: PersistedState | undefined): string | undefined {
    const { tracks } = this.deps;
    const exists = (key: string | undefined) => (key && tracks.get(key) ? key : undefined);
    if (saved && saved.configDefault === this.configDefault && exists(saved.default)) return saved.default;
    return exists(this.configDefault) ?? exists(saved?.default);
  }
}

/** A write refused because the disk is full or read-only (as opposed to a bad request). */
export function storeCannotWrite(err: unknown): boolean {
  return isUpdaterError(err) && (err.code === 'STORE_FULL' || err.code === 'STORE_READ_ONLY');
}

export function toView(track: Track): TrackView {
  return {
    artifact: track.key, name: track.name, os: track.os, arch: track.arch, version: track.version, hash: track.hash,
    size: track.size, source: track.source, binary: track.binary, history: [...track.history],
    rollout: track.rollout ? rolloutView(track.rollout) : null,
  };
}

/** Refuses anything that is not a readable regular file before the store opens it (a FIFO would hang a read). */
async function assertRegularFile(path: string): Promise<void> {
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new UpdaterError('SOURCE_UNREADABLE', `${path} is not a regular file`, { path });
  } catch (err) {
    if (isUpdaterError(err)) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new UpdaterError('SOURCE_UNREADABLE', `cannot read ${path}: ${code}`, { path });
  }
}
