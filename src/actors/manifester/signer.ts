import { FULL_ANSWER } from '../../messages/decision-snapshot.js';
import type { Manifest } from '../../messages/manifester.js';
import { CountLru } from '../../shared/lru.js';
import { signManifest } from '../../shared/signing.js';

/**
 * Signs actionable manifests and keeps them in an entry-count LRU keyed by
 * (artifact, from, to), so a heartbeat that was answered before costs no signature. Full-mode
 * answers do not depend on the device's hash, so they share one entry per (artifact, to).
 */
export class SignedManifests {
  private readonly cache: CountLru<string, Manifest>;
  /** `changed` is told of every entry added or forgotten: the front-ends' snapshots carry them. */
  constructor(private readonly privateKey: Uint8Array, capacity: number, private readonly changed: () => void = () => undefined) {
    this.cache = new CountLru(capacity);
  }

  get size(): number {
    return this.cache.size;
  }

  get(artifact: string, from: string, to: string): Manifest | undefined {
    return this.cache.get(cacheKey(artifact, from, to));
  }

  /** Signs `unsigned` and caches the signed copy. */
  sign(artifact: string, from: string, to: string, unsigned: Manifest): Manifest {
    const signed = { ...unsigned, signature: signManifest(this.privateKey, unsigned.target_hash, unsigned.delta_hash) };
    this.cache.set(cacheKey(artifact, from, to), signed);
    this.changed();
    return signed;
  }

  /**
   * Every entry, grouped by the track and target it answers toward (`artifact|to`), each group
   * by `from`. Reads without touching recency: a snapshot is not a use.
   */
  byTarget(): Map<string, Map<string, Manifest>> {
    const groups = new Map<string, Map<string, Manifest>>();
    for (const [key, manifest] of this.cache.entries()) {
      const toAt = key.lastIndexOf('|');
      const fromAt = key.lastIndexOf('|', toAt - 1);
      const target = `${key.slice(0, fromAt)}|${key.slice(toAt + 1)}`;
      let group = groups.get(target);
      if (!group) groups.set(target, (group = new Map()));
      group.set(key.slice(fromAt + 1, toAt), manifest);
    }
    return groups;
  }

  /** Forgets every manifest of one track (its target or its version label changed). */
  forgetArtifact(artifact: string): void {
    const prefix = `${artifact}|`;
    if (this.cache.deleteWhere((key) => key.startsWith(prefix)) > 0) this.changed();
  }

  /** Forgets every manifest that names a transfer which no longer exists. */
  forgetTransfer(from: string | undefined, to: string): void {
    const suffix = `|${from ?? FULL}|${to}`;
    if (this.cache.deleteWhere((key) => key.endsWith(suffix)) > 0) this.changed();
  }
}

/** The `from` of a full download's entry (it does not depend on the device's hash): the snapshot's key. */
export const FULL = FULL_ANSWER;

function cacheKey(artifact: string, from: string, to: string): string {
  return `${artifact}|${from}|${to}`;
}
