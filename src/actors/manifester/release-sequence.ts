import type { Rollout } from './rollout/rollout.js';

// The `sequence` of a track's release statements (src/shared/release/statement.ts): pure rules,
// tested without threads. A device refuses a statement whose sequence is lower than the one of
// the release it runs, so the sequence must rise with every change of what the track serves
// and never fall, and a rollout's two targets must be ordered:
//
//   publish of new bytes          sequence := next            (the target T)
//     with a rollout              stableSequence := what the stable target had before
//   abort with rollback           stableSequence := next      (above T: devices on T go back)
//   same bytes, a new label       unchanged (the statement is signed again with the new label)
//
// `next` is max(highest + 1, the Unix second of the change): it rises by one per change, and a
// track deleted and published again (or a state file restored from an old backup) starts above
// anything it served before, as long as it served fewer changes than seconds have passed.

export interface Sequenced {
  /** The sequence of the track's target (`hash`). */
  readonly sequence: number;
  /**
   * The sequence of the rollout's stable target, while one is in force: below `sequence` while
   * the rollout runs (a replayed stable answer cannot take a device off the new target), above
   * it after an abort with rollback (the devices on the aborted target install the stable one).
   */
  readonly stableSequence?: number;
  readonly rollout?: Rollout;
}

export function nextSequence(previous: Sequenced | undefined, nowMs: number): number {
  const highest = previous ? Math.max(previous.sequence, previous.stableSequence ?? 0) : 0;
  return Math.max(highest + 1, Math.floor(nowMs / 1000));
}

/** The sequences of a new target: its own, and its rollout's stable target's when it has a rollout. */
export function publishedSequences(previous: Sequenced | undefined, rollout: Rollout | undefined, nowMs: number): { sequence: number; stableSequence?: number } {
  const sequence = nextSequence(previous, nowMs);
  if (!rollout || !previous || rollout.state === 'complete') return { sequence };
  // The stable target of the new rollout is the one the track served before (rollout.ts,
  // successorBasis): the previous target, or the previous rollout's stable target.
  const before = previous.rollout && previous.rollout.state !== 'complete' ? previous.stableSequence ?? previous.sequence : previous.sequence;
  return { sequence, stableSequence: before };
}

/** The sequences after a rollout step: an abort with rollback is a change of what the track serves. */
export function steppedSequences(track: Sequenced, next: Rollout, nowMs: number): { stableSequence?: number } {
  const rolledBack = next.rollback && !track.rollout?.rollback;
  if (rolledBack) return { stableSequence: nextSequence(track, nowMs) };
  return track.stableSequence === undefined ? {} : { stableSequence: track.stableSequence };
}

/** The sequence a statement for the stable target carries. */
export function stableSequenceOf(track: Sequenced): number {
  return track.stableSequence ?? track.sequence;
}
