import { open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { firmware, sha256Hex } from '../test/helpers/fixture.js';

// Input pairs for the delta benchmark: an old and a new version of a ~12 MB binary, edited the
// way a rebuild changes one: many small scattered edits (constants, relocated addresses), a few
// inserted blocks (new code) and a few removed ranges. Two flavours: pseudo-random bytes
// (incompressible, the worst case for zstd and the easy case for bsdiff's matching) and a slice
// of a real ELF (this Node.js executable), which compresses like real firmware does.

export const PAIR_BYTES = 12 * 1024 * 1024;

export interface Pair {
  readonly name: string;
  readonly description: string;
  readonly oldPath: string;
  readonly oldHash: string;
  readonly newPath: string;
  readonly newHash: string;
  readonly newSize: number;
}

interface EditRecipe {
  /** Small overwrites of `smallEditBytes` bytes each. */
  readonly smallEdits: number;
  readonly smallEditBytes: number;
  readonly inserts: number;
  readonly insertMaxBytes: number;
  readonly removals: number;
  readonly removalMaxBytes: number;
  /** Where inserted and overwritten bytes come from (new code looks like old code, or like noise). */
  newBytes(length: number, seed: number): Buffer;
}

/** xorshift32: a deterministic stream, so every run benchmarks the same pair (and a failing fuzz seed replays). */
export function prng(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 0x1_0000_0000;
  };
}

export function nextVersionOf(base: Buffer, recipe: EditRecipe, seed: number): Buffer {
  const random = prng(seed);
  const at = () => Math.floor(random() * base.length);
  const edited = Buffer.from(base);
  for (let i = 0; i < recipe.smallEdits; i++) {
    const position = Math.min(at(), base.length - recipe.smallEditBytes);
    recipe.newBytes(recipe.smallEditBytes, seed + i).copy(edited, position);
  }
  // Inserts and removals shift everything after them, which is what makes diffing hard.
  type Cut = { position: number; insert?: Buffer; remove?: number };
  const cuts: Cut[] = [];
  for (let i = 0; i < recipe.inserts; i++) {
    cuts.push({ position: at(), insert: recipe.newBytes(1024 + Math.floor(random() * recipe.insertMaxBytes), seed * 31 + i) });
  }
  for (let i = 0; i < recipe.removals; i++) cuts.push({ position: at(), remove: 1024 + Math.floor(random() * recipe.removalMaxBytes) });
  cuts.sort((a, b) => a.position - b.position);
  const pieces: Buffer[] = [];
  let cursor = 0;
  for (const cut of cuts) {
    if (cut.position < cursor) continue;
    pieces.push(edited.subarray(cursor, cut.position));
    if (cut.insert) {
      pieces.push(cut.insert);
      cursor = cut.position;
    } else {
      cursor = Math.min(base.length, cut.position + cut.remove!);
    }
  }
  pieces.push(edited.subarray(cursor));
  return Buffer.concat(pieces);
}

async function writePair(dir: string, name: string, description: string, oldBytes: Buffer, newBytes: Buffer): Promise<Pair> {
  const oldPath = join(dir, `${name}-old.bin`);
  const newPath = join(dir, `${name}-new.bin`);
  await writeFile(oldPath, oldBytes);
  await writeFile(newPath, newBytes);
  return { name, description, oldPath, oldHash: sha256Hex(oldBytes), newPath, newHash: sha256Hex(newBytes), newSize: newBytes.length };
}

export async function firmwarePair(dir: string): Promise<Pair> {
  const base = firmware(PAIR_BYTES, 'bench-firmware-v1');
  const next = nextVersionOf(base, {
    smallEdits: 400, smallEditBytes: 8, inserts: 12, insertMaxBytes: 64 * 1024, removals: 4, removalMaxBytes: 32 * 1024,
    newBytes: (length, seed) => firmware(length, `bench-firmware-new-${seed}`),
  }, 0x5eed);
  return writePair(dir, 'firmware', `${mb(base.length)} pseudo-random "firmware" (incompressible)`, base, next);
}

/** A slice of a real executable; undefined when the one at hand is too small to slice. */
export async function elfPair(dir: string, executable: string): Promise<Pair | undefined> {
  const handle = await open(executable, 'r');
  try {
    const { size } = await handle.stat();
    // Skip the headers; take code and data from the middle, and new code from further on.
    const offset = 8 * 1024 * 1024;
    if (size < offset + PAIR_BYTES * 2) return undefined;
    const base = Buffer.allocUnsafe(PAIR_BYTES);
    await handle.read(base, 0, PAIR_BYTES, offset);
    const donor = Buffer.allocUnsafe(4 * 1024 * 1024);
    await handle.read(donor, 0, donor.length, offset + PAIR_BYTES + 1024 * 1024);
    const next = nextVersionOf(base, {
      // Relocated call targets and constants: many 4-byte edits, as a recompile gives.
      smallEdits: 3000, smallEditBytes: 4, inserts: 12, insertMaxBytes: 64 * 1024, removals: 4, removalMaxBytes: 32 * 1024,
      newBytes: (length, seed) => {
        const start = (seed * 7919) % (donor.length - length);
        return Buffer.from(donor.subarray(start, start + length));
      },
    }, 0xe1f);
    return await writePair(dir, 'elf', `${mb(base.length)} slice of ${executable} (real machine code)`, base, next);
  } finally {
    await handle.close();
  }
}

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(0)} MB`;
}
