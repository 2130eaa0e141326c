import { execFile } from 'node:child_process';
import { access, mkdir, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sha256File } from '../src/shared/hash.js';
import type { Pair } from './pairs.js';

// A real executable pair of at least 50 MB: two consecutive releases of Biome's Linux x64
// binary (about 98 MB each, a Rust executable), fetched from the npm registry with `npm pack`
// once and kept in a cache directory. Without the registry the pair is left out and the
// bench says so.

const run = promisify(execFile);
const PACKAGE = '@biomejs/cli-linux-x64';
const VERSIONS = ['2.6.7', '2.6.8'] as const;
const MEMBER = 'package/biome';
const CACHE = process.env.BENCH_DELTA_CACHE ?? join(homedir(), '.cache', 'updater-bench');

async function exists(path: string): Promise<boolean> {
  return access(path).then(() => true, () => false);
}

/** The executable of one release, from the cache or fetched and unpacked into it. */
async function executable(version: string): Promise<string> {
  const path = join(CACHE, `biome-${version}`);
  if (await exists(path)) return path;
  const scratch = join(CACHE, `fetch-${version}-${process.pid}`);
  await mkdir(scratch, { recursive: true });
  try {
    const { stdout } = await run('npm', ['pack', '--silent', `${PACKAGE}@${version}`], { cwd: scratch, timeout: 600_000 });
    const tarball = stdout.trim().split('\n').pop()!;
    await run('tar', ['-xzf', tarball, MEMBER], { cwd: scratch });
    await rename(join(scratch, MEMBER), path);
    return path;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

export async function npmExecutablePair(): Promise<Pair | undefined> {
  try {
    const [oldPath, newPath] = [await executable(VERSIONS[0]), await executable(VERSIONS[1])];
    const [old, next] = [await sha256File(oldPath), await sha256File(newPath)];
    return {
      name: 'biome',
      description: `${PACKAGE} ${VERSIONS[0]} → ${VERSIONS[1]} executable from the npm registry`,
      oldPath, oldHash: old.hash, newPath, newHash: next.hash, newSize: next.size,
    };
  } catch (err) {
    console.log(`  (the real executable pair is left out: ${(err as Error).message.split('\n')[0]})`);
    return undefined;
  }
}
