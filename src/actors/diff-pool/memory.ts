import type { DeltaEngine } from '../../shared/config/types.js';

// The expected peak memory of one delta generation, by engine (docs/memory.md). The store-keeper
// sums it over the generations under way and shows it as `updater_diff_expected_memory_bytes`.

const MB = 1024 * 1024;

/**
 * Native engine (a child process): the source mapped (1×), its 32-bit suffix array (4×), the
 * target mapped (1×: the search lets go of its pages behind it, the verification reads it
 * whole), three compressors (bzip2, or xz for bsdiff-lzma) with their buffer rings and the
 * program itself (a fixed 40 MiB, an upper bound). Verification runs after the suffix array
 * is freed and needs less.
 */
export const NATIVE_SOURCE_FACTOR = 5;
export const NATIVE_TARGET_FACTOR = 1;
export const NATIVE_FIXED_BYTES = 40 * MB;

/** bsdiff-node (in the diff thread): two 64-bit suffix arrays, both files, the patch, the verification. */
export const BSDIFF_NODE_LARGER_FACTOR = 21;

export function expectedGenerationBytes(engine: DeltaEngine, sourceBytes: number, targetBytes: number): number {
  if (engine === 'native') return NATIVE_SOURCE_FACTOR * sourceBytes + NATIVE_TARGET_FACTOR * targetBytes + NATIVE_FIXED_BYTES;
  return BSDIFF_NODE_LARGER_FACTOR * Math.max(sourceBytes, targetBytes);
}
