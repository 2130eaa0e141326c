import type { Manifest } from '../../messages/manifester.js';
import type { DeltaFormat } from '../../shared/delta-formats.js';
import { CountLru } from '../../shared/lru.js';
import { signManifest } from '../../shared/signing.js';

/**
 * Signs actionable manifests and keeps them in an entry-count LRU keyed by
 * (artifact, from, to), so a heartbeat that was answered before costs no signature. Full-mode
 * answers do not depend on the device's hash, so they share one entry per (artifact, to).
 */
export class SignedManifests {
  private readonly cache: CountLru<string, Manifest>;
  constructor(private readonly privateKey: Uint8Array, capacity: number) {
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
    return signed;
  }

  /** Forgets every manifest of one track (its target or its version label changed). */
  forgetArtifact(artifact: string): void {
    const prefix = `${artifact}|`;
    this.cache.deleteWhere((key) => key.startsWith(prefix));
  }

  /** Forgets every manifest that names a transfer which no longer exists. */
  forgetTransfer(from: string | undefined, to: string): void {
    const suffix = `|${from ?? FULL}|${to}`;
    this.cache.deleteWhere((key) => key.endsWith(suffix));
  }
}

export const FULL = '*full*';

/** The `from` of the cache key: a delta of another format than bsdiff40 is another answer. */
export function signedFrom(from: string, format: DeltaFormat | undefined): string {
  return format === undefined || format === 'bsdiff40' ? from : `${from}+${format}`;
}

function cacheKey(artifact: string, from: string, to: string): string {
  return `${artifact}|${from}|${to}`;
}
