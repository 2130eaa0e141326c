import { open, type FileHandle } from 'node:fs/promises';

// A CoAP download is one request per block (1 KiB by default), and opening and closing the file
// for each block took 12.7 % of the coap thread's CPU in a soak profile. Store files are
// immutable and named by their content, so a handle stays right for its path's whole life: one
// is kept open while blocks keep coming and closed once it has been idle for IDLE_MS. A file
// that retention removes meanwhile is still read through the open handle (the same correct
// bytes) until then; the next open after that fails and the transfer is reported gone.

const IDLE_MS = 2_000;
/** Open files at most; the least recently used idle one is closed first. */
const MAX_OPEN = 32;

interface Entry {
  readonly handle: Promise<FileHandle>;
  users: number;
  lastUsed: number;
}

export class OpenFiles {
  private readonly entries = new Map<string, Entry>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly now: () => number = Date.now) {
    this.sweeper = setInterval(() => this.closeIdle(), IDLE_MS);
    this.sweeper.unref();
  }

  get openCount(): number {
    return this.entries.size;
  }

  /** Runs `read` with an open handle of `path`; a failed open (ENOENT…) rejects as open() does. */
  async use<T>(path: string, read: (handle: FileHandle) => Promise<T>): Promise<T> {
    let entry = this.entries.get(path);
    if (entry) {
      // Most recently used last, so the map's order is the eviction order.
      this.entries.delete(path);
    } else {
      entry = { handle: open(path, 'r'), users: 0, lastUsed: this.now() };
      const opened = entry;
      opened.handle.catch(() => {
        if (this.entries.get(path) === opened) this.entries.delete(path);
      });
    }
    this.entries.set(path, entry);
    entry.users++;
    this.evictOverflow();
    try {
      return await read(await entry.handle);
    } finally {
      entry.users--;
      entry.lastUsed = this.now();
    }
  }

  /** Closes every handle (the actor is stopping). */
  async closeAll(): Promise<void> {
    clearInterval(this.sweeper);
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(entries.map((e) => closeQuietly(e)));
  }

  private closeIdle(): void {
    const cutoff = this.now() - IDLE_MS;
    for (const [path, entry] of this.entries) {
      if (entry.users === 0 && entry.lastUsed <= cutoff) this.close(path, entry);
    }
  }

  private evictOverflow(): void {
    if (this.entries.size <= MAX_OPEN) return;
    for (const [path, entry] of this.entries) {
      if (this.entries.size <= MAX_OPEN) break;
      if (entry.users === 0) this.close(path, entry);
    }
  }

  private close(path: string, entry: Entry): void {
    this.entries.delete(path);
    void closeQuietly(entry);
  }
}

async function closeQuietly(entry: Entry): Promise<void> {
  try {
    await (await entry.handle).close();
  } catch {
    // Never opened, or already closed: nothing to release.
  }
}
