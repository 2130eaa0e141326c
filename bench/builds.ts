import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onCores } from './pinning.js';
import { roundRatioRow } from './rounds.js';
import type { RatioRow } from './report.js';

// `--against [name=]path`: other checkouts of the server measured in the same run as this one,
// interleaved round by round, so a refactor's cost is a ratio within one run on one machine
// rather than a comparison of figures taken hours apart under different load. Each build runs
// as its own `updater serve` process (its own bin/updater.js and dist/) on the server cores,
// all from the same configuration apart from ports and store directory.

export interface Build {
  /** Short label for the tables: `this`, or the name given (else the checkout's folder name). */
  readonly name: string;
  /** The checkout's root: holds bin/updater.js and a built dist/. */
  readonly root: string;
  /** `git rev-parse --short HEAD` of the checkout, or '?' outside git. */
  readonly commit: string;
}

const HERE = fileURLToPath(import.meta.url);
/** This checkout: dist/bench/builds.js → the repository root. */
export const THIS_ROOT = resolve(HERE, '..', '..', '..');

/** The `--against` values of the command line, in order; `[]` when there are none. */
export function againstArgs(argv: readonly string[]): string[] {
  const values: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--against') {
      const value = argv[++i];
      if (value === undefined || value.startsWith('--')) throw new RangeError('--against needs a path: --against [name=]/path/to/checkout');
      values.push(value);
    } else if (arg.startsWith('--against=')) {
      values.push(arg.slice('--against='.length));
    }
  }
  return values;
}

/** The command line without the `--against` options and their values. */
export function withoutAgainst(argv: readonly string[]): string[] {
  return argv.filter((arg, i) => arg !== '--against' && argv[i - 1] !== '--against' && !arg.startsWith('--against='));
}

/** This checkout (named `this`) and each `--against` checkout, checked to be built. */
export function buildsFor(against: readonly string[]): Build[] {
  const others = against.map((value) => {
    const at = value.indexOf('=');
    const root = resolve(at > 0 ? value.slice(at + 1) : value);
    const name = at > 0 ? value.slice(0, at) : basename(root);
    return describe(name, root);
  });
  const builds = [describe('this', THIS_ROOT), ...others];
  const names = builds.map((b) => b.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw new RangeError(`two builds are named ${twice}; name them: --against before=/path`);
  return builds;
}

function describe(name: string, root: string): Build {
  for (const needed of ['bin/updater.js', 'dist/src/cli.js']) {
    if (!existsSync(join(root, needed))) throw new RangeError(`${root} has no ${needed}: a checkout built with npx tsc -p tsconfig.json is needed`);
  }
  let commit = '?';
  try {
    commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    // Not a git checkout: the record says '?'.
  }
  return { name, root, commit };
}

/**
 * A signing key every build reads: the first format (a header line, then the 32-byte seed in
 * hex), which builds since PKCS#8 PEM keys still load and builds before them need.
 */
export async function writePortableKeyFile(path: string): Promise<string> {
  await writeFile(path, `updater-ed25519-private-key\n${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  return path;
}

/** A build's `updater serve` on the server cores; resolves once it logged "server started". */
export async function startBuildServer(build: Build, configPath: string): Promise<ChildProcess> {
  return startNodeProcess(join(build.root, 'bin', 'updater.js'), ['serve', '--config', configPath], '"server started"');
}

/**
 * Keeps the warnings and errors a server logs (pino JSON, level 40 and up), at most `limit`,
 * so a suite can print them: an actor restarted in the middle of a run explains a round with
 * no answers.
 */
export function collectWarnings(child: ChildProcess, limit = 20): () => string[] {
  const lines: string[] = [];
  let partial = '';
  const onData = (d: Buffer) => {
    const text = partial + d.toString('utf8');
    const parts = text.split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) if (lines.length < limit && /"level":(4|5|6)0\b/.test(line)) lines.push(line.slice(0, 400));
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  return () => [...lines];
}

/** Prints what each build's server warned about during the run, and counts it in the record. */
export function reportWarnings(warnings: ReadonlyMap<string, () => string[]>, record: Record<string, unknown>): void {
  for (const [name, lines] of warnings) {
    const logged = lines();
    record[`${name}_warnings_logged`] = logged.length;
    if (logged.length > 0) console.log(`  ${name} logged ${logged.length} warning(s) or error(s) during the run:\n    ${logged.join('\n    ')}`);
  }
}

/**
 * A node script on the server cores; resolves once its output contains `readyText`.
 * `nodeArgs` go to node itself (e.g. `--cpu-prof`).
 */
export async function startNodeProcess(file: string, args: readonly string[], readyText: string, nodeArgs: readonly string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ChildProcess> {
  const [command, argv] = onCores('server', process.execPath, [...nodeArgs, file, ...args]);
  const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let output = '';
  const collect = (d: Buffer) => {
    if (output.length < 64_000) output += d;
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const deadline = Date.now() + 60_000;
  while (!output.includes(readyText)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${file} did not start:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return child;
}

export async function stopNodeProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

const CLOCK_TICKS_PER_SECOND = 100;

/** CPU seconds (user + system, every thread) a process has used so far, from /proc. */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which may hold spaces: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/**
 * The comparison rows: each build against the baseline, then each later build against each
 * earlier one in the order given (`this` is listed last: this / before, this / after, after /
 * before), every one taken per round.
 */
export function comparisonRows(kind: string, unit: string, builds: readonly Build[], perRound: (name: string) => number[],
  baseline: { name: string; values: number[] }, goal?: RatioRow['goal']): RatioRow[] {
  const ordered = [...builds.filter((b) => b.name !== 'this'), ...builds.filter((b) => b.name === 'this')];
  const rows: RatioRow[] = ordered.map((b) => roundRatioRow(`${kind} ${unit}, ${b.name} (${b.commit}) / ${baseline.name}`, perRound(b.name), baseline.values, goal ? { goal } : {}));
  for (let later = 1; later < ordered.length; later++) {
    for (let earlier = 0; earlier < later; earlier++) {
      const [a, b] = [ordered[later]!, ordered[earlier]!];
      rows.push(roundRatioRow(`${kind} ${unit}, ${a.name} / ${b.name}`, perRound(a.name), perRound(b.name)));
    }
  }
  return rows;
}
