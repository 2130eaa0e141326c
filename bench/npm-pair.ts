import { execFile } from 'node:child_process';
import { access, mkdir, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sha256File } from '../src/shared/hash.js';
import type { Pair } from './pairs.js';

// Real executable pairs: two consecutive releases of a Linux x64 binary from the npm registry,
// fetched with `npm pack` once and kept in a cache directory. Biome (about 98 MB, a Rust
// executable) is the large pair; esbuild (11 MB, Go), lightningcss (10 MB, a Rust shared
// object) and libvips (19 MB, a C/C++ shared library) make the patch-format corpus of
// bench/results/2026-11-27-patch-format.md. Without the registry a pair is left out and the
// bench says so.

const run = promisify(execFile);
interface NpmPair {
  readonly name: string;
  readonly pkg: string;
  readonly versions: readonly [string, string];
  readonly member: string;
}

const BIOME: NpmPair = { name: 'biome', pkg: '@biomejs/cli-linux-x64', versions: ['2.6.7', '2.6.8'], member: 'package/biome' };
/** The patch-format corpus: languages and sizes other than biome's. */
export const FORMAT_CORPUS: readonly NpmPair[] = [
  { name: 'esbuild', pkg: '@esbuild/linux-x64', versions: ['0.28.1', '0.28.2'], member: 'package/bin/esbuild' },
  { name: 'lightningcss', pkg: 'lightningcss-linux-x64-gnu', versions: ['1.32.0', '1.33.0'], member: 'package/lightningcss.linux-x64-gnu.node' },
  { name: 'libvips', pkg: '@img/sharp-libvips-linux-x64', versions: ['1.3.3', '1.3.4'], member: 'package/lib/libvips-cpp.so.8.18.7' },
];
const CACHE = process.env.BENCH_DELTA_CACHE ?? join(homedir(), '.cache', 'updater-bench');

async function exists(path: string): Promise<boolean> {
  return access(path).then(() => true, () => false);
}

/** The executable of one release, from the cache or fetched and unpacked into it. */
async function executable(pair: NpmPair, version: string): Promise<string> {
  const path = join(CACHE, `${pair.name}-${version}`);
  if (await exists(path)) return path;
  const scratch = join(CACHE, `fetch-${version}-${process.pid}`);
  await mkdir(scratch, { recursive: true });
  try {
    const { stdout } = await run('npm', ['pack', '--silent', `${pair.pkg}@${version}`], { cwd: scratch, timeout: 600_000 });
    const tarball = stdout.trim().split('\n').pop()!;
    // libvips names its library by its own version: take the member's directory's one .so.
    const member = pair.name === 'libvips' ? await libvipsMember(scratch, tarball) : pair.member;
    await run('tar', ['-xzf', tarball, member], { cwd: scratch });
    await rename(join(scratch, member), path);
    return path;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

async function libvipsMember(cwd: string, tarball: string): Promise<string> {
  const { stdout } = await run('tar', ['-tzf', tarball], { cwd, maxBuffer: 16 << 20 });
  const member = stdout.split('\n').find((line) => /^package\/lib\/libvips-cpp\.so\.\d+\.\d+\.\d+$/.test(line));
  if (!member) throw new Error('no libvips-cpp.so in the package');
  return member;
}

export async function npmExecutablePair(pair: NpmPair = BIOME): Promise<Pair | undefined> {
  try {
    const [oldPath, newPath] = [await executable(pair, pair.versions[0]), await executable(pair, pair.versions[1])];
    const [old, next] = [await sha256File(oldPath), await sha256File(newPath)];
    return {
      name: pair.name,
      description: `${pair.pkg} ${pair.versions[0]} → ${pair.versions[1]} from the npm registry`,
      oldPath, oldHash: old.hash, newPath, newHash: next.hash, newSize: next.size,
    };
  } catch (err) {
    console.log(`  (the real executable pair is left out: ${(err as Error).message.split('\n')[0]})`);
    return undefined;
  }
}
