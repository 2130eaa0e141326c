import type { RoutingFacts } from '../shared/decision/route.js';
import type { ManifestWire } from '../shared/wire/keys.js';
import type { TransferInfo } from './store.js';

// What the manifester publishes to each front-end so that the front-end answers the steady
// state itself (docs/architecture.md, "The heartbeat path"): the tracks and their rollouts, the
// answers already made, encoded for the front-end's transport, and the store facts the
// decision table reads. Immutable once sent; a change of any of it is a new version. The
// front-end runs the shared decision (src/shared/decision/) on it and sends the manifester
// only what needs an action: a delta or full file not made yet, an answer not signed yet, an
// offer of a rollout's target, anything the snapshot does not hold.

/** The answers toward one target, `T` the transport's body (JSON text or CBOR bytes). */
export interface TargetAnswers<T> {
  readonly hash: string;
  readonly size: number;
  /** `update_available: false` toward this target, with its release statement (rows 2 and 7). */
  readonly noUpdate: T;
  /** The same answer as fields: a device outside its rollout's window gets it with its own `retry_after`. */
  readonly noUpdateFields: ManifestWire;
  /**
   * The signed answers the manifester has made and still holds, with their release statement:
   * a delta's by `signedAnswerKey(from, format)`, the full download's by FULL_ANSWER.
   */
  readonly signed: ReadonlyMap<string, T>;
}

/** The key of a track's full-download answer in `signed` (not a hash, so never a delta's key). */
export const FULL_ANSWER = '*full*';

/** A rollout as routing needs it, with the answers toward its stable target (null: none yet). */
export interface RolloutAnswers<T> extends RoutingFacts {
  readonly stable: TargetAnswers<T> | null;
}

export interface TrackAnswers<T> {
  readonly target: TargetAnswers<T>;
  /** The track's staged rollout while it is not complete; null otherwise. */
  readonly rollout: RolloutAnswers<T> | null;
}

export interface DecisionSnapshot<T> {
  /** Changes with every snapshot, and with every start of the manifester. */
  readonly version: string;
  /** The track a heartbeat naming none follows. */
  readonly defaultTrack: string | null;
  readonly tracks: ReadonlyMap<string, TrackAnswers<T>>;
  /** The binaries the store holds, by hash: their sizes (what rows 3 to 7 read). */
  readonly binaries: ReadonlyMap<string, number>;
  /** Finished transfers toward the targets above, by transferKey(). */
  readonly transfers: ReadonlyMap<string, TransferInfo>;
  /** About what it weighs in a front-end's heap: its answers, keys and indexes. */
  readonly bytes: number;
}

/** The key of a signed delta answer in `signed`: a delta of another format than bsdiff40 is another answer. */
export function signedAnswerKey(from: string, format: string | undefined): string {
  return format === undefined || format === 'bsdiff40' ? from : `${from}+${format}`;
}

/** The key of a finished transfer in a snapshot: a delta by pair and format, a full file by target. */
export function transferKey(kind: 'delta' | 'full', to: string, from?: string, format?: string): string {
  if (kind === 'full') return `f:${to}`;
  return format === undefined || format === 'bsdiff40' ? `d:${from}:${to}` : `d:${from}:${to}:${format}`;
}
