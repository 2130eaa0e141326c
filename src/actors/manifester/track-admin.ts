import { dirname, isAbsolute, join } from 'node:path';
import type { PublishOutcome, PublishRequest, ReloadOutcome, RolloutView, TrackListing, TrackView } from '../../messages/manifester.js';
import { makeTrackId, parseTrackKey, trackKey } from '../../shared/artifact-key.js';
import type { Config } from '../../shared/config/types.js';
import { UpdaterError, isUpdaterError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { RolloutPlan } from '../../shared/rollout-plan.js';
import { isActive, replaced, rolloutView, startRollout, successorBasis, type Rollout } from './rollout/rollout.js';
import { KeyedQueues } from './serial.js';
import type { SignedManifests } from './signer.js';
import { bootClusterTracks } from './cluster/cluster-boot.js';
import type { ClusterTracks } from './cluster/cluster-tracks.js';
import { storePublishedFile } from './publish-paths.js';
import type { StoreAccess } from './store-access.js';
import { bootDefault, bootFromStateFile } from './track-boot.js';
import { TrackRecorder } from './track-record.js';
import { toView, type Track, type TrackTable } from './tracks.js';
import { steppedSequences } from './release-sequence.js';
import type { BinaryInfo } from '../../messages/store.js';
import { assertSha256Hex } from '../../shared/hash.js';
import { invalidField } from '../../shared/input.js';
import { binaryName, storeLayout } from '../../shared/store-layout.js';
import { versionLabelProblem } from '../../shared/version-label.js';
import type { WebhookEvent } from '../../shared/webhooks/events.js';
import { publishEvents, removedEvent, rolloutEvent } from './track-events.js';
import { namesGroups, refuseUnknownGroups, trackNaming, type FleetGroups } from './rollout/rollout-groups.js';
import type { GroupView } from '../../messages/fleet.js';

// The track lifecycle (docs/operations.md, "Configuration versus the API"), for configuration at boot and for the admin API after:
//
//   publish ─▶ stream the file into the store (durable) ─▶ table + state file ─▶ Current
//   identical bytes and version                          ─▶ nothing at all (no-op)
//   a new target                                         ─▶ the old one goes into history
//   a new target with a rollout                          ─▶ rolled out in stages (rollout.ts);
//                                                           a rollout under way is replaced
//   delete                                               ─▶ gone from the table; bytes stay
//
// A track is recorded only once its binary is durable in the store, and the table changes
// only once the state file records it (track-record.ts), so a crash at any point leaves the
// old target or the new one, never a track whose binary is missing. Boot is track-boot.ts.

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
  /** The fleet actor's groups, which rollouts' steps name; undefined without an inventory (no group exists). */
  readonly groups?: FleetGroups;
}

type Source = Track['source'];

export class TrackAdmin {
  private readonly perTrack = new KeyedQueues();
  private readonly configKeys: ReadonlySet<string>;
  private readonly configDefault: string;
  private readonly recorder: TrackRecorder;

  constructor(private readonly deps: TrackAdminDeps) {
    this.configKeys = new Set(deps.config.artifacts.map((a) => a.key));
    this.configDefault = deps.config.defaultArtifact ?? '';
    this.recorder = new TrackRecorder(deps, this.configDefault);
  }

  /** Boot: a single node's from its state file (track-boot.ts), a cluster replica's from the database (cluster/cluster-boot.ts). */
  boot(): Promise<void> {
    const shared = { ...this.deps, configKeys: this.configKeys, bootDefault: (saved: { default: string; configDefault: string }) => bootDefault(this.deps.tracks, this.configDefault, saved) };
    const cluster = this.deps.cluster;
    if (cluster) {
      return bootClusterTracks({ ...shared, cluster, sync: () => this.sync(true), changeTable: (change) => this.changeTable(change) });
    }
    return bootFromStateFile({ ...shared, configDefault: this.configDefault, persist: () => this.recorder.persist() });
  }

  /** Cluster mode: brings the table to what the database holds (a notification, the resync timer, a reconnect). */
  sync(force = false): Promise<void> {
    return this.recorder.sync(force);
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
      for (const hash of hashes) if (!store.holdsBinary(hash)) store.adoptInBackground(hash);
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
    // Checked again here, where every publish passes: the label is part of the signed release statement.
    const versionProblem = versionLabelProblem(request.version);
    if (versionProblem !== undefined) invalidField('version', versionProblem);
    this.refuseConfigured(key, 'publish onto');
    const source: Source = 'api';
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
        const track = tracks.get(key)!;
        // An abort with rollback numbers the stable target above the aborted one (release-sequence.ts).
        tracks.restore({ ...track, rollout: next, ...steppedSequences(track, next, Date.now()) });
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
    this.refuseConfigured(key, 'delete');
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

  /**
   * DELETE /admin/groups/{name}: the group goes unless a rollout not complete or aborted names
   * it (GROUP_IN_USE); null when there was none. Under the tracks' lock, as a publish's check
   * of its groups (rollout/rollout-groups.ts): whichever of the two comes second is refused.
   */
  deleteGroup(name: string): Promise<GroupView | null> {
    return this.recorder.hold(async () => {
      const naming = trackNaming(this.deps.tracks.all(), name);
      if (naming) {
        throw new UpdaterError('GROUP_IN_USE', `the rollout of ${naming.key}, not complete or aborted, names the group ${JSON.stringify(name)}; complete or abort it first`, { group: name, artifact: naming.key });
      }
      return this.deps.groups ? this.deps.groups.delete(name) : null;
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
   * alone (docs/operations.md, "Per-component pipelines"). A reload of everything goes on past a
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
  private async publishNow(next: Omit<Track, 'hash' | 'size' | 'history' | 'rollout' | 'sequence' | 'stableSequence'>, plan?: RolloutPlan, stored?: BinaryInfo): Promise<PublishOutcome> {
    const groups = this.deps.groups;
    const checkGroups = namesGroups(plan) ? async () => refuseUnknownGroups(plan, groups ? await groups.names() : []) : undefined;
    // Once before the file is stored (a typo costs no copy), and again under the tracks' lock,
    // where a delete of a group it names waits for the publish or comes before the check.
    await checkGroups?.();
    const binary = stored ?? await storePublishedFile(next.key, next.binary, this.deps.config, this.deps.store);
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
    }, checkGroups);
    if (published) for (const event of publishEvents(published, Date.now())) this.deps.events?.(event);
    return outcome;
  }

  /**
   * The configuration owns the tracks it names: it republishes them at every start, so an API
   * publish or delete there would be undone by the next restart (the fleet offered the old build
   * again under a higher sequence). Refused instead, naming the file to change (TRACK_CONFIGURED).
   * A reload (the configured file read again) and rollout calls stay allowed.
   */
  private refuseConfigured(key: string, what: string): void {
    if (!this.configKeys.has(key)) return;
    throw new UpdaterError('TRACK_CONFIGURED',
      `cannot ${what} track ${key} through the API: ${this.deps.config.configPath} declares it, and every start republishes it from there; change the file (then POST /admin/reload or restart), or publish under another track name`,
      { artifact: key, config: this.deps.config.configPath });
  }

  /** Applies a change to the table and records it (track-record.ts), after `first` under the same lock. */
  private changeTable<T>(change: () => T, first?: () => Promise<void>): Promise<T> {
    return this.recorder.change(change, first);
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
}
