import type { TargetAnswers, TrackAnswers } from '../../messages/decision-snapshot.js';
import type { AnswerEncoding, EncodedAnswer, HealthView, HeartbeatRequest, Manifest } from '../../messages/manifester.js';
import type { TransferInfo } from '../../messages/store.js';
import type { Config } from '../../shared/config/types.js';
import { chooseFormat, formatsOffered, type DeltaFormat } from '../../shared/delta-formats.js';
import { UpdaterError } from '../../shared/errors.js';
import { encodeCoapManifest } from '../../shared/wire/cbor.js';
import type { Logger } from '../../shared/logger.js';
import { CountLru } from '../../shared/lru.js';
import { decide } from '../../shared/decision/decide.js';
import type { ManifesterMetrics } from './metrics.js';
import { stableSequenceOf } from './release-sequence.js';
import type { ReleaseStatements, StatementSlot } from './release-statements.js';
import type { TargetRef } from './rollout/rollout.js';
import { routeDevice, type Routed } from '../../shared/decision/route.js';
import { WindowClock } from '../../shared/decision/window-clock.js';
import { FULL, type SignedManifests } from './signer.js';
import { signedAnswerKey } from '../../messages/decision-snapshot.js';
import type { StoreView } from './store-view.js';
import type { Track, TrackTable } from './tracks.js';

/** What a device is answered toward: a track's target, or its stable target during a rollout. */
interface Target {
  readonly key: string;
  readonly version: string;
  readonly hash: string;
  readonly size: number;
  /** The sequence of its release statement (release-sequence.ts). */
  readonly sequence: number;
}

/** What a snapshot entry costs a front-end's heap beside its key and body (map slot, object, header). */
export const SNAPSHOT_ENTRY_BYTES = 96;

/** How often the same oversize pair is logged at WARN. */
const OVERSIZE_WARN_INTERVAL_MS = 10 * 60_000;

export interface StoreRequests {
  ensureDelta(from: string, to: string, format?: DeltaFormat): void;
  ensureFull(hash: string): void;
}

/** Answers heartbeats from the track table and the store replica (docs/protocol.md, "What a manifest means"). */
export class Manifester {
  private readonly warned = new CountLru<string, number>(1024);
  /**
   * The unsigned answers of a target, built once. A track (and its rollout's stable target) is
   * replaced by a new object when it changes, so these go with the old object and are never stale.
   */
  private readonly unsigned = new WeakMap<Target, { noUpdate: Manifest; retryLater: Manifest }>();
  /** The stable target of a rollout as a Target of its track, one object per stable reference. */
  private readonly stableTargets = new WeakMap<TargetRef, Target>();
  /**
   * Every answer is a long-lived object (above, or the signed-manifest LRU): its encodings are
   * kept beside it, made on first use. So an answer that changes must be a new object.
   */
  private readonly encodings: { readonly [E in AnswerEncoding]: WeakMap<Manifest, EncodedAnswer[E]> } = { json: new WeakMap(), cbor: new WeakMap() };
  /** The statement slot of each target object, so that a heartbeat finds it without building a key. */
  private readonly slotOf = new WeakMap<Target, StatementSlot>();
  /** Each answer with its current release statement: rebuilt only when the statement was renewed. */
  private readonly withRelease = new WeakMap<Manifest, { release: StatementSlot['release']; answer: Manifest }>();

  /** The patch formats this server generates. */
  private readonly offered: readonly DeltaFormat[];

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    private readonly tracks: TrackTable,
    private readonly store: StoreView,
    private readonly signed: SignedManifests,
    private readonly requests: StoreRequests,
    private readonly metrics: ManifesterMetrics,
    private readonly statements: ReleaseStatements,
    /** Told of each rollout target offered to a device not on it yet (rollout/offer-feed.ts). */
    private readonly offers?: { offered(deviceId: string, targetHash: string, fromHash: string): void },
    /** Maintenance windows, read once a second (a device's is judged here only when no front-end routed it). */
    private readonly clock = new WindowClock(),
  ) {
    this.offered = formatsOffered(config.store.deltaEngine);
  }

  /** The answer of the decision table, with the release statement of the target it names. */
  heartbeat(request: HeartbeatRequest): Manifest {
    const { manifest, target } = this.decideFor(request);
    return this.released(manifest, target);
  }

  private released(manifest: Manifest, target: Target): Manifest {
    let slot = this.slotOf.get(target);
    if (!slot || !this.statements.holds(slot)) {
      slot = this.statements.slot(target);
      this.slotOf.set(target, slot);
    }
    const held = this.withRelease.get(manifest);
    if (held && held.release === slot.release) return held.answer;
    const answer = { ...manifest, release: slot.release };
    this.withRelease.set(manifest, { release: slot.release, answer });
    return answer;
  }

  private decideFor(request: HeartbeatRequest): { manifest: Manifest; target: Target } {
    const track = this.tracks.resolve(request.artifact);
    let target: Target | undefined = track;
    const rollout = track?.rollout;
    // A staged rollout picks the target before rows 2-7; without one, or once it is complete,
    // the table runs exactly as decide.ts has it.
    if (track && rollout && rollout.state !== 'complete') {
      // The front-end routed it already, with the device's group memberships (src/actors/front-ends/targeting-facts.ts).
      // Its snapshot may be older than a pause or abort that reached this thread first: the
      // target is offered only while the rollout runs here.
      const routed = request.route !== undefined && (request.route !== 'target' || rollout.state === 'running')
        ? request.route
        : routeDevice(rollout, request, this.clock);
      const route = typeof routed === 'string' ? routed : routed.route;
      this.metrics.routed(route);
      if (route === 'wait') return { manifest: { ...this.noUpdate(track), retry_after: (routed as Routed).waitSeconds }, target: track };
      if (route === 'stay' || (route === 'stable' && rollout.stable === null)) return { manifest: this.noUpdate(track), target: track };
      if (route === 'stable') target = this.stableTarget(track, rollout.stable!);
      else if (request.versionHash !== rollout.target.hash) this.offers?.offered(request.deviceId, rollout.target.hash, request.versionHash);
    }
    const format = chooseFormat(request.deltaFormats, this.offered);
    const decision = decide({
      target,
      format,
      versionHash: request.versionHash,
      store: this.store,
      capBytes: this.config.store.deltaMaxSourceBytes,
      allowFullDownload: this.config.allowFullDownload,
    });
    this.metrics.decided(decision.row);
    if (decision.action === 'unknown-artifact' || !target) {
      throw new UpdaterError('ARTIFACT_NOT_FOUND', `no track ${request.artifact || '(default)'}`, { artifact: request.artifact });
    }
    switch (decision.action) {
      case 'up-to-date':
      case 'stranded':
        return { manifest: this.noUpdate(target), target };
      case 'serve-delta':
        return { manifest: this.signedDelta(target, request.versionHash, decision.delta, format), target };
      case 'generate-delta':
        this.requests.ensureDelta(request.versionHash, target.hash, format);
        return { manifest: this.retryLater(target), target };
      case 'serve-full':
        if ('oversize' in decision) this.warnOversize(target, decision.oversize);
        return { manifest: this.signedFull(target), target };
    }
  }

  /** One object per stable reference and sequence (an abort with rollback renumbers the same target). */
  private stableTarget(track: Track, stable: TargetRef): Target {
    const sequence = stableSequenceOf(track);
    let target = this.stableTargets.get(stable);
    if (!target || target.sequence !== sequence) {
      target = { key: track.key, version: stable.version, hash: stable.hash, size: stable.size, sequence };
      this.stableTargets.set(stable, target);
    }
    return target;
  }

  /**
   * Every answer a front-end may give without asking (src/messages/decision-snapshot.ts): per
   * track, toward its target and a rollout's stable target, the no-update answer and the
   * signed answers this manifester holds, each with its release statement, encoded as `heartbeat`
   * answers are. `bytes` is about what the encodings weigh.
   */
  snapshotTracks<E extends AnswerEncoding>(encoding: E): { tracks: Map<string, TrackAnswers<EncodedAnswer[E]>>; bytes: number } {
    const signedBy = this.signed.byTarget();
    let bytes = 0;
    const weigh = (body: EncodedAnswer[E]): EncodedAnswer[E] => {
      bytes += typeof body === 'string' ? body.length : (body as Uint8Array).byteLength;
      return body;
    };
    const toward = (target: Target): TargetAnswers<EncodedAnswer[E]> => {
      const signed = new Map<string, EncodedAnswer[E]>();
      for (const [from, manifest] of signedBy.get(`${target.key}|${target.hash}`) ?? []) {
        signed.set(from, weigh(this.encoded(this.released(manifest, target), encoding)));
        bytes += from.length + SNAPSHOT_ENTRY_BYTES;
      }
      const noUpdateFields = this.released(this.noUpdate(target), target);
      bytes += SNAPSHOT_ENTRY_BYTES * 4;
      return { hash: target.hash, size: target.size, noUpdate: weigh(this.encoded(noUpdateFields, encoding)), noUpdateFields, signed };
    };
    const tracks = new Map<string, TrackAnswers<EncodedAnswer[E]>>();
    for (const track of this.tracks.all()) {
      const r = track.rollout;
      const rollout = r && r.state !== 'complete'
        ? {
          target: { hash: r.target.hash }, state: r.state, percent: r.percent, rollback: r.rollback, held: r.held, step: r.step,
          plan: { steps: r.plan.steps, ...(r.plan.window ? { window: r.plan.window } : {}) },
          stable: r.stable ? toward(this.stableTarget(track, r.stable)) : null,
        }
        : null;
      tracks.set(track.key, { target: toward(track), rollout });
      bytes += track.key.length + SNAPSHOT_ENTRY_BYTES;
    }
    return { tracks, bytes };
  }

  health(): HealthView {
    const artifacts: HealthView['artifacts'] = {};
    for (const t of this.tracks.all()) artifacts[t.key] = { version: t.version, hash: t.hash };
    return { status: 'ok', artifacts };
  }

  private base(track: Target): Manifest {
    return {
      update_available: false,
      target_version: track.version,
      target_hash: track.hash,
      target_size: track.size,
      delta_size: 0,
      delta_hash: '',
      chunk_size: this.config.manifest.chunkSize,
      total_chunks: 0,
      artifact: track.key,
    };
  }

  /** An answer of `heartbeat` as a front-end sends it (the JSON body, or CoAP's CBOR), encoded once per answer. */
  encoded<E extends AnswerEncoding>(manifest: Manifest, encoding: E): EncodedAnswer[E] {
    const kept = this.encodings[encoding] as WeakMap<Manifest, EncodedAnswer[E]>;
    let body = kept.get(manifest);
    if (body === undefined) {
      body = (encoding === 'json' ? JSON.stringify(manifest) : encodeCoapManifest(manifest)) as EncodedAnswer[E];
      kept.set(manifest, body);
    }
    return body;
  }

  private unsignedFor(track: Target): { noUpdate: Manifest; retryLater: Manifest } {
    let answers = this.unsigned.get(track);
    if (!answers) {
      const noUpdate = this.base(track);
      answers = { noUpdate, retryLater: { ...noUpdate, update_available: true, retry_after: this.config.manifest.retryAfterSeconds } };
      this.unsigned.set(track, answers);
    }
    return answers;
  }

  private noUpdate(track: Target): Manifest {
    return this.unsignedFor(track).noUpdate;
  }

  private retryLater(track: Target): Manifest {
    return this.unsignedFor(track).retryLater;
  }

  private signedDelta(track: Target, from: string, delta: TransferInfo, format: DeltaFormat): Manifest {
    const key = signedAnswerKey(from, format);
    const cached = this.signed.get(track.key, key, track.hash);
    const manifest = cached ?? this.signed.sign(track.key, key, track.hash, {
      ...this.transferFields(track, delta),
      // bsdiff40 keeps its endpoint and leaves delta_format out: byte for byte the answer of before.
      ...(format === 'bsdiff40'
        ? { delta_endpoint: `/delta/${from}/${track.hash}` }
        : { delta_endpoint: `/delta/${from}/${track.hash}/${format}`, delta_format: format }),
    });
    this.metrics.served('delta');
    return manifest;
  }

  private signedFull(track: Target): Manifest {
    const cached = this.signed.get(track.key, FULL, track.hash);
    if (cached) {
      this.metrics.served('full');
      return cached;
    }
    const full = this.store.full(track.hash);
    if (!full) {
      // The compressed target is still being written: only finished files are ever promised.
      this.requests.ensureFull(track.hash);
      return this.retryLater(track);
    }
    this.metrics.served('full');
    return this.signed.sign(track.key, FULL, track.hash, {
      ...this.transferFields(track, full),
      binary_endpoint: `/binary/${track.hash}`,
    });
  }

  private transferFields(track: Target, transfer: TransferInfo): Manifest {
    const chunk = this.config.manifest.chunkSize;
    return {
      ...this.base(track),
      update_available: true,
      delta_size: transfer.size,
      delta_hash: transfer.hash,
      total_chunks: Math.ceil(transfer.size / chunk),
    };
  }

  private warnOversize(track: Target, oversize: { hash: string; size: number }): void {
    const key = `${oversize.hash}|${track.hash}`;
    const now = Date.now();
    const last = this.warned.get(key);
    if (last !== undefined && now - last < OVERSIZE_WARN_INTERVAL_MS) return;
    this.warned.set(key, now);
    this.log.warn({
      artifact: track.key,
      binary: oversize.hash,
      size: oversize.size,
      cap_bytes: this.config.store.deltaMaxSourceBytes,
    }, 'binary exceeds store.delta_max_source_mb; serving full mode instead of a delta');
  }
}
