import type { DecisionSnapshot } from '../../../messages/decision-snapshot.js';
import type { AnswerEncoding, EncodedAnswer } from '../../../messages/manifester.js';
import { SNAPSHOT_ENTRY_BYTES, type Manifester } from '../manifester.js';
import type { StoreView } from '../store-view.js';
import type { TrackTable } from '../tracks.js';

// One decision snapshot for one transport's encoding: the manifester's answers
// (Manifester.snapshotTracks) and the part of the store index the decision table reads. Only
// the transfers toward a target some track serves go in: the others cannot be offered.

/** A binary's hash as a key, and a transfer's key and description, beside SNAPSHOT_ENTRY_BYTES. */
const BINARY_BYTES = 64;
const TRANSFER_BYTES = 300;

export function buildSnapshot<E extends AnswerEncoding>(
  version: string, encoding: E, from: { manifester: Manifester; tracks: TrackTable; view: StoreView },
): DecisionSnapshot<EncodedAnswer[E]> {
  const { tracks: answers, bytes: answerBytes } = from.manifester.snapshotTracks(encoding);
  const targets = new Set<string>();
  for (const track of answers.values()) {
    targets.add(track.target.hash);
    if (track.rollout?.stable) targets.add(track.rollout.stable.hash);
  }
  const binaries = from.view.binarySizes();
  const transfers = from.view.transfersToward(targets);
  const bytes = answerBytes + binaries.size * (BINARY_BYTES + SNAPSHOT_ENTRY_BYTES) + transfers.size * (TRANSFER_BYTES + SNAPSHOT_ENTRY_BYTES);
  return { version, defaultTrack: from.tracks.default ?? null, tracks: answers, binaries, transfers, bytes };
}
