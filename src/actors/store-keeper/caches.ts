import { open } from 'node:fs/promises';
import { ByteLru } from '../../shared/lru.js';
import { sha256 } from '../../shared/hash.js';

// The two byte budgets the store-keeper owns (spec part 8). Entries are SharedArrayBuffers so
// a front-end or a diff task reads them without a copy through the message channel.

/** Reads a whole file into shared memory; only ever called for files that fit a budget. */
export async function readShared(path: string, size: number): Promise<SharedArrayBuffer> {
  const shared = new SharedArrayBuffer(size);
  const handle = await open(path, 'r');
  try {
    const view = new Uint8Array(shared);
    let offset = 0;
    while (offset < size) {
      const { bytesRead } = await handle.read(view, offset, size - offset, offset);
      if (bytesRead === 0) throw new Error(`${path} is shorter than ${size} bytes`);
      offset += bytesRead;
    }
  } finally {
    await handle.close();
  }
  return shared;
}

/**
 * Target cache: verified bytes of delta targets, keyed by hash and shared by all tracks.
 * bsdiff-node reads its inputs from files, so the cached bytes serve to verify each new
 * delta against the target without re-reading and re-hashing it from disk per generation.
 */
export class TargetCache {
  private readonly lru: ByteLru<string, SharedArrayBuffer>;
  constructor(budgetBytes: number) {
    this.lru = new ByteLru(budgetBytes);
  }

  get usedBytes(): number {
    return this.lru.usedBytes;
  }

  /** Cached bytes, loading and verifying them when they fit; undefined for a target over budget. */
  async bytesFor(hash: string, path: string, size: number): Promise<SharedArrayBuffer | undefined> {
    const cached = this.lru.get(hash);
    if (cached || !this.lru.fits(size)) return cached;
    const shared = await readShared(path, size);
    if (sha256(new Uint8Array(shared)) !== hash) return undefined;
    this.lru.set(hash, shared, size);
    return shared;
  }

  drop(hash: string): void {
    this.lru.delete(hash);
  }
}

/** Hot transfer cache: one budget for deltas and full files together, keyed by file name. */
export class HotTransferCache {
  private readonly lru: ByteLru<string, SharedArrayBuffer>;
  private readonly loading = new Set<string>();
  constructor(budgetBytes: number) {
    this.lru = new ByteLru(budgetBytes);
  }

  get usedBytes(): number {
    return this.lru.usedBytes;
  }

  get(name: string): SharedArrayBuffer | undefined {
    return this.lru.get(name);
  }

  /** Starts loading a file in the background; the request that asked is served from disk. */
  warm(name: string, path: string, size: number, onError: (err: unknown) => void): void {
    if (this.lru.has(name) || this.loading.has(name) || !this.lru.fits(size)) return;
    this.loading.add(name);
    readShared(path, size)
      .then((shared) => {
        if (this.loading.has(name)) this.lru.set(name, shared, size);
      })
      .catch(onError)
      .finally(() => this.loading.delete(name));
  }

  drop(name: string): void {
    this.loading.delete(name);
    this.lru.delete(name);
  }
}
