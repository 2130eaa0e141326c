import type { SerializedError } from '../shared/errors.js';
import type { RolloutPlan } from '../shared/rollout-plan.js';
import type { ManifestWire } from '../shared/wire/keys.js';
import type { HeartbeatRequest } from '../shared/wire/validate.js';
import { CONTROL_DEADLINES_MS, type ControlApi, type Deadlines } from './lifecycle.js';
import type { StoreEvent } from './store.js';

/** What a front-end extracts from a validated heartbeat. */
/** What a heartbeat asks, as the wire validator produces it (defined beside it, once). */
export type { HeartbeatRequest };

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

/** One answer of a batch: the answer, or the error the decision raised (e.g. ARTIFACT_NOT_FOUND). */
export type HeartbeatOutcome<T = Manifest> = { readonly value: T } | { readonly error: SerializedError };

export interface ManifesterApi extends ControlApi, TrackAdminApi {
  /**
   * Several heartbeats in one message, answered in order. A front-end under load batches the
   * heartbeats that arrived together: one cross-thread message costs more than a decision.
   */
  heartbeats(requests: readonly HeartbeatRequest[]): Promise<HeartbeatOutcome[]>;
  /**
   * The same, each manifest already serialized as the JSON body of interface.md. The
   * manifester serializes an answer once and keeps the text with it, so the HTTP front-end,
   * the busiest thread, neither clones a manifest object nor stringifies one per heartbeat.
   */
  heartbeatsJson(requests: readonly HeartbeatRequest[]): Promise<HeartbeatOutcome<string>[]>;
  health(): Promise<HealthView>;
  references(): Promise<TrackReferences>;
  /** Called by the store-keeper for every change to the store index. */
  storeEvent(event: StoreEvent): Promise<void> | void;
}

// ---- Track administration (spec 3.2, 4.2); the http front-end's admin routes call these. ----

/** One track as `GET /admin/artifacts` lists it (interface.md), plus the path it came from. */
export interface TrackView {
  artifact: string;
  name: string;
  os: string;
  arch: string;
  version: string;
  hash: string;
  size: number;
  source: 'config' | 'api';
  /** Server-side path the track is published from, and watched. */
  binary: string;
  /** Superseded target hashes, newest first (delta sources). */
  history: string[];
  /** The track's staged rollout, or null when its target went to every device at once. */
  rollout: RolloutView | null;
}

/** A staged rollout as the admin API shows it (interface.md, "Staged rollouts"). */
export interface RolloutView {
  target_hash: string;
  target_version: string;
  /** The last target of the track that reached 100 %; null when none did yet. */
  stable_hash: string | null;
  percent: number;
  steps: number[];
  /** Echoed as given. */
  step_interval: string;
  max_failure_rate: number;
  min_reports: number;
  state: 'running' | 'paused' | 'complete' | 'aborted';
  paused_reason: 'failure_rate' | 'operator' | null;
  /** Aborted with rollback: devices on the target are offered the stable target. */
  rollback: boolean;
  /** Boot-confirmed reports counted toward an automatic pause (since the start or the last resume). */
  reports: { success: number; failure: number };
  /** Unix seconds. */
  started_at: number;
  next_step_at: number | null;
}

/** `POST /admin/rollout`: an action, or a percent set by the operator. */
export type RolloutCommand =
  | { readonly artifact: string; readonly action: 'pause' | 'resume' | 'abort' | 'complete'; readonly rollback: boolean }
  | { readonly artifact: string; readonly percent: number };

export interface TrackListing {
  /** The track that answers heartbeats naming no artifact; '' when there is none. */
  default: string;
  artifacts: TrackView[];
}

/** `POST /admin/artifacts`: the fields of a configuration entry; `binary` is an absolute path. */
export interface PublishRequest {
  readonly name: string;
  readonly os: string;
  readonly arch: string;
  readonly version: string;
  readonly binary: string;
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
}

export const MANIFESTER_DEADLINES_MS = {
  ...CONTROL_DEADLINES_MS,
  /** A heartbeat answer is on the device's critical path; anything slower is an outage. */
  heartbeats: 5_000,
  heartbeatsJson: 5_000,
  health: 5_000,
  /** Asked by the retention sweeper, which is in no hurry. */
  references: 5 * 60_000,
  storeEvent: 2_000,
  listTracks: 10_000,
  /** Publishing streams a whole binary into the store; a large image on a slow disk takes minutes. */
  publishTrack: 15 * 60_000,
  deleteTrack: 10_000,
  setDefaultTrack: 10_000,
  /** A reload of everything reads every track's binary, one after another. */
  reloadTracks: 60 * 60_000,
  controlRollout: 10_000,
  rolloutOf: 10_000,
} as const satisfies Deadlines<ManifesterApi>;
