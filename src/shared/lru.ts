// Least-recently-used maps bounded by a budget. A Map keeps insertion order, so re-inserting
// on access makes the first key the least recently used one.

export class CountLru<K, V> {
  private readonly map = new Map<K, V>();
  constructor(readonly capacity: number) {}

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    if (this.capacity <= 0) return;
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as K);
  }

  delete(key: K): boolean {
    return this.map.delete(key);
  }

  /** Every entry, least recently used first, without touching recency. */
  entries(): IterableIterator<[K, V]> {
    return this.map.entries();
  }

  deleteWhere(predicate: (key: K, value: V) => boolean): number {
    let removed = 0;
    for (const [key, value] of this.map) {
      if (predicate(key, value)) {
        this.map.delete(key);
        removed++;
      }
    }
    return removed;
  }

  clear(): void {
    this.map.clear();
  }
}

/** An LRU whose budget is bytes. An entry larger than the whole budget is never stored. */
export class ByteLru<K, V> {
  private readonly map = new Map<K, { value: V; bytes: number }>();
  private used = 0;
  constructor(readonly budgetBytes: number) {}

  get usedBytes(): number {
    return this.used;
  }

  get size(): number {
    return this.map.size;
  }

  fits(bytes: number): boolean {
    return bytes <= this.budgetBytes;
  }

  has(key: K): boolean {
    return this.map.has(key);
  }

  get(key: K): V | undefined {
    const entry = this.map.get(key);
    if (!entry) return undefined;
    this.map.delete(key);
    this.map.set(key, entry);
    return entry.value;
  }

  /** Stores the entry, evicting the least recently used ones; false when it can never fit. */
  set(key: K, value: V, bytes: number): boolean {
    if (!this.fits(bytes)) return false;
    this.delete(key);
    this.map.set(key, { value, bytes });
    this.used += bytes;
    for (const [oldKey, entry] of this.map) {
      if (this.used <= this.budgetBytes) break;
      this.map.delete(oldKey);
      this.used -= entry.bytes;
    }
    return true;
  }

  delete(key: K): boolean {
    const entry = this.map.get(key);
    if (!entry) return false;
    this.map.delete(key);
    this.used -= entry.bytes;
    return true;
  }
}
