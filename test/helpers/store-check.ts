import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256Hex } from './fixture.js';

/**
 * Every file under a final name in a store fits its name, checked with the stock tools:
 * `{h}.bin` hashes to h, `{h}.full.zst` decompresses (zstd) to bytes hashing to h,
 * `{a}_{b}.delta.zst` decompresses and bspatches binary a into bytes hashing to b.
 * Returns the names that do not fit; `sources` finds a binary the store no longer holds.
 */
export function storeMismatches(storeDir: string, sources: Map<string, string> = new Map()): string[] {
  const bad: string[] = [];
  const scratch = mkdtempSync(join(tmpdir(), 'store-check-'));
  try {
    const binaries = join(storeDir, 'binaries');
    for (const name of list(binaries)) {
      const m = /^([0-9a-f]{64})\.bin$/.exec(name);
      if (m && sha256Hex(readFileSync(join(binaries, name))) !== m[1]) bad.push(name);
    }
    const deltas = join(storeDir, 'deltas');
    for (const name of list(deltas)) {
      const full = /^([0-9a-f]{64})\.full\.zst$/.exec(name);
      const delta = /^([0-9a-f]{64})_([0-9a-f]{64})\.delta\.zst$/.exec(name);
      if (!full && !delta) continue;
      const out = join(scratch, 'out');
      try {
        execFileSync('zstd', ['-d', '-q', '-f', join(deltas, name), '-o', out], { stdio: 'ignore' });
        if (full) {
          if (sha256Hex(readFileSync(out)) !== full[1]) bad.push(name);
          continue;
        }
        const source = sources.get(delta![1]!) ?? join(binaries, `${delta![1]}.bin`);
        execFileSync('bspatch', [source, join(scratch, 'rebuilt'), out], { stdio: 'ignore' });
        if (sha256Hex(readFileSync(join(scratch, 'rebuilt'))) !== delta![2]) bad.push(name);
      } catch {
        bad.push(name);
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return bad;
}

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
