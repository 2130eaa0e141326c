import { execFile } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import engine from 'updater-delta-engine';
import { prng } from '../../bench/pairs.js';

// Fuzz pairs for the native delta engine. Every patch the engine writes (and verifies itself)
// is applied again by the stock `bspatch` command and by the engine's streaming `patch`, and
// both results are compared with the target. The fixed edge cases come first, then seeded
// random and mutated pairs; `rounds` bounds the random part (the test runs a few dozen, a
// campaign by hand runs thousands: `DELTA_FUZZ_ROUNDS=5000 npx tap dist/test/delta-engine`).

const run = promisify(execFile);

export interface FuzzPair {
  readonly name: string;
  readonly old: Buffer;
  readonly next: Buffer;
}

function randomBytes(random: () => number, length: number, alphabet = 256): Buffer {
  const out = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) out[i] = Math.floor(random() * alphabet);
  return out;
}

/** Flips, inserts, deletes and moves ranges of `base`, as rebuilt software does. */
export function mutate(base: Buffer, random: () => number, edits: number): Buffer {
  let out = Buffer.from(base);
  for (let i = 0; i < edits; i++) {
    const at = Math.floor(random() * (out.length + 1));
    const length = 1 + Math.floor(random() * Math.min(4096, out.length + 1));
    switch (Math.floor(random() * 4)) {
      case 0:
        for (let j = at; j < Math.min(out.length, at + length); j++) out[j] = Math.floor(random() * 256);
        break;
      case 1:
        out = Buffer.concat([out.subarray(0, at), randomBytes(random, length), out.subarray(at)]);
        break;
      case 2:
        out = Buffer.concat([out.subarray(0, at), out.subarray(Math.min(out.length, at + length))]);
        break;
      default: {
        const from = Math.floor(random() * out.length);
        out = Buffer.concat([out.subarray(0, at), out.subarray(from, from + length), out.subarray(at)]);
      }
    }
  }
  return out;
}

/** Empty, equal, 1-byte and one-byte-repeated files, and sizes around the engine's buffers. */
export function edgePairs(): FuzzPair[] {
  const random = prng(0xed9e);
  const pairs: FuzzPair[] = [
    { name: 'both empty', old: Buffer.alloc(0), next: Buffer.alloc(0) },
    { name: 'empty old', old: Buffer.alloc(0), next: randomBytes(random, 5000) },
    { name: 'empty new', old: randomBytes(random, 5000), next: Buffer.alloc(0) },
    { name: '1 byte to 1 byte', old: Buffer.from([7]), next: Buffer.from([9]) },
    { name: '1 byte equal', old: Buffer.from([7]), next: Buffer.from([7]) },
    { name: '1 byte to many', old: Buffer.from([0]), next: randomBytes(random, 3000) },
    { name: 'many to 1 byte', old: randomBytes(random, 3000), next: Buffer.from([255]) },
    { name: 'one repeated byte, equal', old: Buffer.alloc(100_000, 0x41), next: Buffer.alloc(100_000, 0x41) },
    { name: 'one repeated byte, longer', old: Buffer.alloc(70_000, 0), next: Buffer.alloc(130_000, 0) },
    { name: 'one repeated byte, other byte', old: Buffer.alloc(50_000, 1), next: Buffer.alloc(50_000, 2) },
    { name: 'two-symbol text', old: randomBytes(random, 40_000, 2), next: randomBytes(random, 40_000, 2) },
  ];
  const equal = randomBytes(random, 300_000);
  pairs.push({ name: 'equal files', old: equal, next: Buffer.from(equal) });
  // The engine's staging buffer (64 KiB), its bzip2 hand-over buffers (1 MiB) and bzip2's
  // block (900,000 bytes): one byte either side of each.
  for (const boundary of [65_536, 900_000, 1 << 20]) {
    for (const size of [boundary - 1, boundary, boundary + 1]) {
      const old = randomBytes(random, size, 16);
      pairs.push({ name: `size ${size}`, old, next: mutate(old, random, 3) });
      // Unrelated inputs make bsdiff search every position (seconds per MB): small ones only.
      if (boundary < 100_000) pairs.push({ name: `size ${size}, unrelated`, old: randomBytes(random, size), next: randomBytes(random, size) });
    }
  }
  return pairs;
}

export function randomPair(seed: number): FuzzPair {
  const random = prng(seed);
  const kind = seed % 4;
  const size = Math.floor(random() * (kind === 3 ? 200_000 : 20_000));
  const alphabet = [2, 4, 16, 256][Math.floor(random() * 4)]!;
  const old = randomBytes(random, size, alphabet);
  if (kind === 0) return { name: `seed ${seed}: unrelated`, old, next: randomBytes(random, Math.floor(random() * 20_000), alphabet) };
  return { name: `seed ${seed}: mutated`, old, next: mutate(old, random, 1 + Math.floor(random() * 20)) };
}

export interface FuzzOutcome {
  readonly patchBytes: number;
}

/**
 * Diffs one pair with the engine, applies the patch with stock bspatch (BSDIFF40 only) and
 * the engine; throws on any difference.
 */
export async function checkPair(dir: string, pair: FuzzPair, format: 'bsdiff40' | 'bsdiff-lzma' = 'bsdiff40'): Promise<FuzzOutcome> {
  const oldPath = join(dir, 'old');
  const newPath = join(dir, 'new');
  const patchPath = join(dir, 'patch');
  const stockPath = join(dir, 'rebuilt-stock');
  const oursPath = join(dir, 'rebuilt-ours');
  await writeFile(oldPath, pair.old);
  await writeFile(newPath, pair.next);
  try {
    const { stdout } = await run(engine.programPath, ['diff', oldPath, newPath, patchPath, format]);
    const report = JSON.parse(stdout) as { patchBytes: number };
    if (format === 'bsdiff40') {
      await run('bspatch', [oldPath, stockPath, patchPath]);
      if (!(await readFile(stockPath)).equals(pair.next)) throw new Error(`${pair.name}: stock bspatch rebuilt different bytes`);
    }
    engine.patch(oldPath, patchPath, oursPath);
    if (!(await readFile(oursPath)).equals(pair.next)) throw new Error(`${pair.name}: the engine's patch rebuilt different bytes`);
    return { patchBytes: report.patchBytes };
  } finally {
    await Promise.all([oldPath, newPath, patchPath, stockPath, oursPath].map((path) => rm(path, { force: true })));
  }
}
