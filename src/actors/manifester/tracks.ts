import type { TrackView } from '../../messages/manifester.js';
import { parseTrackKey, trackKey } from '../../shared/artifact-key.js';
import { UpdaterError } from '../../shared/errors.js';
import { publishedSequences, type Sequenced } from './release-sequence.js';
import { relabel, rolloutView, type Rollout } from './rollout/rollout.js';

/** A publication track and its current target (docs/operations.md, "The calls"). */
export interface Track extends Sequenced {
  readonly key: string;
  readonly name: string;
  readonly os: string;
  readonly arch: string;
  readonly version: string;
  readonly hash: string;
  readonly size: number;
  readonly source: 'config' | 'api';
  /** Server-side path the track was published from (watched for file-backed tracks). */
  readonly binary: string;
  /** Superseded target hashes, newest first; kept as delta sources. */
  readonly history: readonly string[];
  /** The staged rollout of `hash`; absent when the target went to every device at once. */
  readonly rollout?: Rollout;
}

/** A new target's fields; the table numbers it (release-sequence.ts). */
export type PublishedTarget = Omit<Track, 'history' | 'sequence' | 'stableSequence'>;

export class TrackTable {
  private readonly tracks = new Map<string, Track>();
  private defaultKey: string | undefined;

  /**
   * `changed` is told synchronously after every change of the table (its default too), before
   * any heartbeat can read it: the release statements of what the table now serves are signed
   * there, and the front-ends' snapshot is marked stale.
   */
  constructor(private readonly changed: (tracks: readonly Track[]) => void = () => undefined) {}

  get default(): string | undefined {
    return this.defaultKey;
  }

  all(): Track[] {
    return [...this.tracks.values()];
  }

  get(key: string): Track | undefined {
    return this.tracks.get(key);
  }

  /**
   * Resolves a heartbeat's artifact: empty means the default track. A malformed key is a
   * client mistake (INVALID_ARTIFACT_KEY); an unknown one resolves to undefined (row 1).
   */
  resolve(artifact: string): Track | undefined {
    if (artifact === '') return this.defaultKey === undefined ? undefined : this.tracks.get(this.defaultKey);
    const direct = this.tracks.get(artifact);
    if (direct) return direct;
    return this.tracks.get(trackKey(parseTrackKey(artifact)));
  }

  /** Sets the current target; a different hash pushes the old one into history. */
  publish(next: PublishedTarget, historyDepth: number, nowMs = Date.now()): { track: Track; changed: boolean } {
    const previous = this.tracks.get(next.key);
    if (previous && previous.hash === next.hash) {
      // The same bytes: whatever rollout they are in goes on, under the new label.
      const rollout = previous.rollout && previous.version !== next.version ? relabel(previous.rollout, next.version) : previous.rollout;
      const same = { ...previous, version: next.version, source: next.source, binary: next.binary, ...(rollout ? { rollout } : {}) };
      this.set(same);
      return { track: same, changed: false };
    }
    const history = previous ? [previous.hash, ...previous.history.filter((h) => h !== previous.hash && h !== next.hash)] : [];
    const track: Track = { ...next, ...publishedSequences(previous, next.rollout, nowMs), history: history.slice(0, historyDepth) };
    this.set(track);
    return { track, changed: true };
  }

  /** Restores a track exactly as it was persisted, or replaces it with a changed copy. */
  restore(track: Track): void {
    this.set(track);
  }

  /** Puts back a whole earlier table (a change whose state-file write failed). */
  replaceAll(tracks: readonly Track[], defaultKey: string | undefined): void {
    this.tracks.clear();
    for (const track of tracks) this.tracks.set(track.key, track);
    this.defaultKey = defaultKey;
    this.changed(this.all());
  }

  remove(key: string): Track | undefined {
    const track = this.tracks.get(key);
    this.tracks.delete(key);
    if (this.defaultKey === key) this.defaultKey = undefined;
    this.changed(this.all());
    return track;
  }

  private set(track: Track): void {
    this.tracks.set(track.key, track);
    this.changed(this.all());
  }

  setDefault(key: string | undefined): void {
    if (key !== undefined && !this.tracks.has(key)) throw new UpdaterError('ARTIFACT_NOT_FOUND', `no track ${key}`);
    if (this.defaultKey === key) return;
    this.defaultKey = key;
    this.changed(this.all());
  }

  /** Infers the default when exactly one track exists and none was chosen. */
  inferDefault(): void {
    if (this.defaultKey === undefined && this.tracks.size === 1) this.setDefault(this.tracks.keys().next().value);
  }
}

/** A track as the admin API lists it. */
export function toView(track: Track): TrackView {
  return {
    artifact: track.key, name: track.name, os: track.os, arch: track.arch, version: track.version, hash: track.hash,
    size: track.size, source: track.source, binary: track.binary, history: [...track.history],
    rollout: track.rollout ? rolloutView(track.rollout) : null, sequence: track.sequence,
  };
}
