import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { tapEnv } from './tap-env.js';

// A test file started as tap starts it (`--import` of tap's process-info hook on the command
// line), in the environment `npm test` gives tap (tap-env.ts): tap-first.ts keeps the hook idle,
// so no module passes through a hooks thread and no record is written at exit, and the file runs
// as it would otherwise. Started without tap-first.ts, the same file has the hook working: what
// this saves.

const PROCESS_INFO_HOOK = import.meta.resolve('@tapjs/processinfo/import');
const TAP = import.meta.resolve('tap');

interface Seen {
  readonly status: number | null;
  readonly output: string;
  /** The files tap's hook reported to the test's thread as loaded through it. */
  readonly files: string[];
  /** The records the hook wrote at exit (.tap/processinfo in the working directory). */
  readonly records: string[];
}

/**
 * `file` in a temp directory, started as tap starts a test file, in `env`. The file imports tap
 * and a module of its own statically, another dynamically, and prints the files the hook
 * reported.
 */
async function runAsTapDoes(t: Test, env: NodeJS.ProcessEnv, file = 'sample.test.js'): Promise<Seen> {
  const dir = await mkdtemp(join(tmpdir(), 'updater-tap-first-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'own-module.mjs'), 'export const answer = 42;\n');
  await writeFile(join(dir, 'late-module.mjs'), 'export const late = true;\n');
  // Imports tap by its resolved URL: the temp directory has no node_modules.
  await writeFile(join(dir, file), [
    `import t from ${JSON.stringify(TAP)};`,
    `import { answer } from './own-module.mjs';`,
    `const { late } = await import('./late-module.mjs');`,
    `const info = globalThis[Symbol.for('@tapjs/processinfo.ProcessInfoNodeData')];`,
    // A working hook reports the module imported in the body soon after (its reports come in
    // order, on a port): waited for, up to a second, which only an idle hook uses up.
    `for (let i = 0; i < 200 && !info.files.some((f) => f.endsWith('late-module.mjs')); i++) await new Promise((resolve) => setTimeout(resolve, 5));`,
    `console.log('FILES ' + JSON.stringify(info.files));`,
    `t.equal(answer, 42);`,
    `t.equal(late, true);`,
  ].join('\n'));
  // Through `env`, as nodeChild (node-options.ts) does: tap's hook in this process rewrites the
  // NODE_OPTIONS and _TAPJS_PROCESSINFO_EXCLUDE_ (node_modules by default) of every child it spawns.
  // Its record goes below _TAPJS_PROCESSINFO_CWD_, which tap's runner sets to the project's root.
  const settings = [`NODE_OPTIONS=${env.NODE_OPTIONS ?? ''}`, 'TAP_CHILD_ID=1', '_TAPJS_PROCESSINFO_EXCLUDE_=/$./', `_TAPJS_PROCESSINFO_CWD_=${dir}`];
  const run = spawnSync('/usr/bin/env', [...settings, process.execPath, '--enable-source-maps', `--import=${PROCESS_INFO_HOOK}`, join(dir, file)], {
    cwd: dir, encoding: 'utf8', env, timeout: 60_000,
  });
  const line = run.stdout.split('\n').find((l) => l.startsWith('FILES '));
  const recordDir = join(dir, '.tap', 'processinfo');
  return {
    status: run.status, output: `${run.stdout}${run.stderr}`,
    files: line ? (JSON.parse(line.slice(6)) as string[]) : [],
    records: existsSync(recordDir) ? await readdir(recordDir) : [],
  };
}

const fromTap = (file: string) => /node_modules[\\/](tap|@tapjs[\\/]core)[\\/]/.test(file);
const withoutNodeOptions = () => {
  const { NODE_OPTIONS: _tapsOwn, ...env } = process.env;
  return env;
};

t.test('with tap-first.ts, tap\'s process-info hook stays idle: no module passes through it, no record is written', async (t) => {
  const seen = await runAsTapDoes(t, tapEnv(withoutNodeOptions()));
  t.equal(seen.status, 0, 'the file passes');
  if (seen.status !== 0) t.comment(seen.output);
  t.same(seen.files, [], 'the hook saw no module, neither imported statically nor in the body');
  t.same(seen.records, [], 'and wrote no record at exit');
});

t.test('without it, tap\'s modules and the file\'s own go through the hook, and it records the process', async (t) => {
  const seen = await runAsTapDoes(t, withoutNodeOptions());
  t.equal(seen.status, 0, 'the file passes');
  if (seen.status !== 0) t.comment(seen.output);
  t.ok(seen.files.some((f) => f.endsWith('own-module.mjs')), 'the hook saw the test file\'s static import');
  t.ok(seen.files.some((f) => f.endsWith('late-module.mjs')), 'and the one imported in its body');
  t.ok(seen.files.filter(fromTap).length > 10, `the hook saw ${seen.files.filter(fromTap).length} of tap's modules`);
  t.equal(seen.records.length, 1, 'it wrote its record at exit');
});

t.test('outside a test file\'s own process it does nothing', async (t) => {
  // The processes the tests start inherit NODE_OPTIONS: one whose main file is not a test file
  // has the hook working, as it would without tap-first.ts.
  const seen = await runAsTapDoes(t, tapEnv(withoutNodeOptions()), 'server.mjs');
  t.equal(seen.status, 0, 'the file passes');
  if (seen.status !== 0) t.comment(seen.output);
  t.ok(seen.files.filter(fromTap).length > 10, `the hook saw ${seen.files.filter(fromTap).length} of tap's modules`);
  t.equal(seen.records.length, 1, 'and wrote its record');
});
