import { unwatchFile, watchFile, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Logger } from '../../shared/logger.js';

// Watches the file each track is published from (configured tracks and tracks published
// through the API from a path: both are file-backed). A change republishes that track alone,
// and only once the file has stopped changing: its size, mtime and inode must stay the same
// for `settleMs`, so a binary that is still being copied in is never published half written.
//
// fs.watchFile polls stat() by path rather than following an inode, so a file replaced by a
// rename (the usual `cp new tmp && mv tmp binary` deployment) is seen like an in-place write,
// and a file that disappears and comes back later is picked up again.

interface Watched {
  readonly path: string;
  readonly listener: (curr: Stats, prev: Stats) => void;
  timer?: NodeJS.Timeout;
  last?: Stats;
}

export class BinaryWatcher {
  private readonly watched = new Map<string, Watched>();
  private readonly pollMs: number;
  private closed = false;

  constructor(
    private readonly settleMs: number,
    private readonly onSettled: (key: string) => void,
    private readonly log: Logger,
  ) {
    // Several polls fit in one settle period, so "unchanged for settleMs" is really observed.
    this.pollMs = Math.max(50, Math.min(1000, Math.floor(settleMs / 4)));
  }

  /** Watches exactly the given (track, file) pairs: new ones start, gone or moved ones stop. */
  sync(tracks: readonly { key: string; binary: string }[]): void {
    if (this.closed) return;
    const wanted = new Map(tracks.map((t) => [t.key, t.binary]));
    for (const [key, entry] of this.watched) {
      if (wanted.get(key) !== entry.path) this.stop(key);
    }
    for (const [key, path] of wanted) {
      if (!this.watched.has(key)) this.start(key, path);
    }
  }

  close(): void {
    this.closed = true;
    for (const key of [...this.watched.keys()]) this.stop(key);
  }

  private start(key: string, path: string): void {
    const entry: Watched = {
      path,
      listener: (curr) => {
        entry.last = curr;
        clearTimeout(entry.timer);
        if (isMissing(curr)) {
          this.log.warn({ artifact: key, path }, 'the binary of a track disappeared; the track keeps its current target');
          return;
        }
        entry.timer = setTimeout(() => void this.settle(key, entry), this.settleMs);
      },
    };
    this.watched.set(key, entry);
    watchFile(path, { interval: this.pollMs, persistent: false }, entry.listener);
  }

  private stop(key: string): void {
    const entry = this.watched.get(key);
    if (!entry) return;
    clearTimeout(entry.timer);
    unwatchFile(entry.path, entry.listener);
    this.watched.delete(key);
  }

  /** The settle period passed without a change event: check once more, then republish. */
  private async settle(key: string, entry: Watched): Promise<void> {
    if (this.watched.get(key) !== entry) return;
    let now: Stats;
    try {
      now = await stat(entry.path);
    } catch {
      return; // gone again; the next change event starts over
    }
    if (!entry.last || !sameFile(now, entry.last)) {
      entry.last = now;
      entry.timer = setTimeout(() => void this.settle(key, entry), this.settleMs);
      return;
    }
    this.log.info({ artifact: key, path: entry.path, size: now.size }, 'watched binary changed and settled; republishing the track');
    this.onSettled(key);
  }
}

function isMissing(s: Stats): boolean {
  // watchFile reports a missing file as all-zero stats.
  return s.nlink === 0 && s.mtimeMs === 0 && s.ino === 0;
}

function sameFile(a: Stats, b: Stats): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino && a.ctimeMs === b.ctimeMs;
}
