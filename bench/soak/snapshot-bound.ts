// What the front-ends' decision snapshots may weigh by docs/memory.md's formula, for the soak's
// shape: the answers (each signed answer the manifest cache can hold, two per track), every
// binary the store holds, and every finished transfer toward a target a track serves.

/** The soak's front-ends (HTTP and CoAP), each holding a decision snapshot. */
export const FRONT_ENDS = 2;
/** One answer in a snapshot, with its key and map entry (docs/memory.md). */
const ANSWER_BYTES = 1024;
/** One binary's hash and size in a snapshot (docs/memory.md). */
const BINARY_BYTES = 160;
/** One transfer's key and description in a snapshot, and its place in the front-end's index of them (docs/memory.md). */
const TRANSFER_BYTES = 460;

export interface SnapshotShape {
  readonly tracks: number;
  /** Versions of each track published before the load starts. */
  readonly versions: number;
  readonly manifestCacheSize: number;
}

export interface SnapshotRun {
  /** Versions published during the run, one track at a time, at most. */
  readonly publishes: number;
  /** Whether those publishes are staged rollouts: a track then serves its stable target too. */
  readonly rollouts: boolean;
  /** Patch formats the delta engine makes (docs/patch-formats.md): a delta per source and format. */
  readonly formats: number;
}

/**
 * The bytes the snapshots of both front-ends may hold at most. Deltas in the soak go from an
 * older version of a device's own track to its target, so a target's sources are the track's
 * other versions; each target has one full file besides.
 */
export function snapshotBoundBytes(shape: SnapshotShape, run: SnapshotRun): number {
  const versionsPerTrack = shape.versions + Math.ceil(run.publishes / shape.tracks);
  const binaries = shape.tracks * shape.versions + run.publishes;
  const targets = shape.tracks * (run.rollouts ? 2 : 1);
  const transfers = targets * (1 + (versionsPerTrack - 1) * run.formats);
  const answers = shape.manifestCacheSize + 2 * shape.tracks;
  return FRONT_ENDS * (answers * ANSWER_BYTES + binaries * BINARY_BYTES + transfers * TRANSFER_BYTES);
}
