import type { SerializedError } from '../shared/errors.js';
import type { DecisionSnapshot } from './decision-snapshot.js';
import type { RolloutPlan } from '../shared/rollout-plan.js';
import type { CertificateWire, ManifestWire } from '../shared/wire/keys.js';
import type { HeartbeatRequest } from '../shared/wire/validate.js';
import type { GroupView, RolloutView, TrackListing, TrackView } from './admin-wire.js';
import { CONTROL_DEADLINES_MS, type ControlApi, type Deadlines } from './lifecycle.js';
import type { StoreEvent } from './store.js';

/** What a heartbeat asks, as the wire validator produces it (defined beside it, once). */
export type { HeartbeatRequest };

/**
 * Heartbeats as they cross to the manifester: one array per field, heartbeat i at index i of
 * each. Structured cloning writes every property name of every object again; three arrays of
 * strings cost each thread a third of the objects' serialization (src/actors/front-ends/heartbeat-batcher.ts).
 */
export interface HeartbeatBatch {
  readonly deviceIds: readonly string[];
  readonly versionHashes: readonly string[];
  readonly artifacts: readonly string[];
  /** Each heartbeat's delta_formats joined by commas, names with a comma left out ('' when none is left): one string, not an array per heartbeat. */
  readonly formats?: readonly string[];
  /** Each heartbeat's rollout route as the front-end took it ('' when it took none; src/shared/decision/route.ts). */
  readonly routes?: readonly string[];
}

/** How a front-end wants its answers: the JSON body (HTTP), or CBOR with the CoAP chunk fields (CoAP). */
export type AnswerEncoding = 'json' | 'cbor';

/** An answer body in each encoding. */
export interface EncodedAnswer {
  readonly json: string;
  readonly cbor: Uint8Array;
}

/**
 * The answers of a batch, in its order: each answer's body, encoded once per answer by the
 * manifester and kept with it; where a decision raised an error (e.g. ARTIFACT_NOT_FOUND) the
 * body is null and `errors` holds the error at that index.
 */
export interface HeartbeatAnswers<T> {
  readonly bodies: readonly (T | null)[];
  readonly errors: readonly { readonly at: number; readonly error: SerializedError }[];
}

/** ManifestResponse with the JSON keys of the device protocol (src/shared/wire/keys.ts). */
export type Manifest = ManifestWire;

export interface HealthView {
  status: 'ok';
  artifacts: Record<string, { version: string; hash: string }>;
  /** Cluster mode only: whether this replica reaches the shared database. */
  database?: 'ok' | 'unreachable';
}

/** The hashes the tracks still need, for retention. */
export interface TrackReferences {
  current: string[];
  history: string[];
}

export interface ManifesterApi extends ControlApi, TrackAdminApi {
  /**
   * Several heartbeats in one message, answered in order, for both front-ends: a front-end
   * under load batches the heartbeats that arrived together (one cross-thread message costs
   * more than a decision), and gets each answer already encoded for its transport. The
   * manifester encodes an answer once and keeps the bytes with it, so the front-ends, the
   * busiest threads, neither clone a manifest object nor encode one per heartbeat.
   */
  heartbeats<E extends AnswerEncoding>(batch: HeartbeatBatch, encoding: E): Promise<HeartbeatAnswers<EncodedAnswer[E]>>;
  /**
   * The front-ends' decision snapshot by long poll (src/messages/decision-snapshot.ts): answered
   * at once when the manifester's version differs from `known`, else when the next is made, or
   * with null after 20 s. `poller` names the asking front-end; `known` is also its
   * acknowledgement of the version it holds (src/actors/manifester/snapshot/publisher.ts).
   */
  decisionSnapshot<E extends AnswerEncoding>(poller: string, known: string, encoding: E): Promise<DecisionSnapshot<EncodedAnswer[E]> | null>;
  health(): Promise<HealthView>;
  references(): Promise<TrackReferences>;
  /** Called by the store-keeper for every change to the store index. */
  storeEvent(event: StoreEvent): Promise<void> | void;
  /** The signing key's certificate (`signing.certificate_file`) for `GET /keys`; null when none is configured. */
  signingCertificate(): Promise<CertificateWire | null>;
}

// ---- Track administration (docs/operations.md); the http front-end's admin routes call these. ----

/** The admin API's track answers (defined in admin-wire.ts, which the console imports). */
export type { RolloutView, TrackListing, TrackView };

/** `POST /admin/rollout`: an action, or a percent set by the operator. */
export type RolloutCommand =
  | { readonly artifact: string; readonly action: 'pause' | 'resume' | 'abort' | 'complete' | 'advance'; readonly rollback: boolean }
  | { readonly artifact: string; readonly percent: number };

/** `POST /admin/artifacts`: the fields of a configuration entry; `binary` is an absolute path. */
export interface PublishRequest {
  readonly name: string;
  readonly os: string;
  readonly arch: string;
  readonly version: string;
  /** A server-side path; exactly one of `binary` and `hash` is given. */
  readonly binary?: string;
  /** A binary the store already holds (uploaded with PUT /admin/binaries). */
  readonly hash?: string;
  /** Roll the target out in stages; without it every device is offered it at once. */
  readonly rollout?: RolloutPlan;
}

export interface PublishOutcome extends TrackView {
  /** False when the same bytes and version were already current (a no-op). */
  changed: boolean;
}

export interface ReloadOutcome {
  /** Tracks whose files were read again. */
  reloaded: string[];
  /** Those among them whose target actually changed. */
  changed: string[];
  /** Whole-fleet reloads go on past a broken file; each failure is listed here. */
  failed: { artifact: string; code: string; message: string }[];
}

export interface TrackAdminApi {
  listTracks(): Promise<TrackListing>;
  publishTrack(request: PublishRequest): Promise<PublishOutcome>;
  /** Rejects with ARTIFACT_NOT_FOUND for an unknown track. The bytes stay for retention. */
  deleteTrack(artifact: string): Promise<TrackView>;
  setDefaultTrack(artifact: string): Promise<{ default: string }>;
  /** Re-reads every file-backed track, or only `artifact` when it is given. */
  reloadTracks(artifact?: string): Promise<ReloadOutcome>;
  /** ROLLOUT_NOT_FOUND for a track without a rollout, ROLLOUT_CONFLICT for an action its state forbids. */
  controlRollout(command: RolloutCommand): Promise<RolloutView>;
  /** The rollout of a track; null when it has none or is not a track (any more). */
  rolloutOf(artifact: string): Promise<RolloutView | null>;
  /**
   * DELETE /admin/groups/{name}: deletes the fleet's group unless a rollout not complete or
   * aborted names it (GROUP_IN_USE); null when there is none. One step with every publish's
   * check of the groups it names, on every replica of a cluster.
   */
  deleteGroup(name: string): Promise<GroupView | null>;
}

export const MANIFESTER_DEADLINES_MS = {
  ...CONTROL_DEADLINES_MS,
  /** A heartbeat answer is on the device's critical path; anything slower is an outage. */
  heartbeats: 5_000,
  /** A long poll, held up to 20 s by the manifester. */
  decisionSnapshot: 30_000,
  health: 5_000,
  /** Asked by the retention sweeper, which is in no hurry. */
  references: 5 * 60_000,
  storeEvent: 2_000,
  signingCertificate: 5_000,
  listTracks: 10_000,
  /** Publishing streams a whole binary into the store; a large image on a slow disk takes minutes. */
  publishTrack: 15 * 60_000,
  deleteTrack: 10_000,
  setDefaultTrack: 10_000,
  /** A reload of everything reads every track's binary, one after another. */
  reloadTracks: 60 * 60_000,
  controlRollout: 10_000,
  rolloutOf: 10_000,
  /** Waits for the tracks' lock (a publish holds it while it records), then for the fleet actor's delete (10 s). */
  deleteGroup: 20_000,
} as const satisfies Deadlines<ManifesterApi>;
