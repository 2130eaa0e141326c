import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { staticImports, tapEnv } from './tap-env.js';

// A test file started as tap starts it (`--import` of tap's process-info hook on the command
// line), in the environment `npm test` gives tap (tap-env.ts): tap and the file's static imports
// are loaded before the hook, so none of them is among the files the hook saw, while what the
// file imports in its body still passes through it. Started without tap-first.ts, the same file
// sends them all through the hook: what this saves.

const PROCESS_INFO_HOOK = import.meta.resolve('@tapjs/processinfo/import');
const TAP = import.meta.resolve('tap');

interface Seen {
  readonly status: number | null;
  readonly output: string;
  /** The files tap's hook reported to the test's thread as loaded through it. */
  readonly files: string[];
}

/**
 * `file` in a temp directory, started as tap starts a test file, in `env`. The file imports tap
 * and a module of its own statically, another dynamically, and prints the files the hook
 * reported once the last one's report is in (the hook's reports arrive in order, on a port).
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
    `while (!info.files.some((f) => f.endsWith('late-module.mjs'))) await new Promise((resolve) => setImmediate(resolve));`,
    `console.log('FILES ' + JSON.stringify(info.files));`,
    `t.equal(answer, 42);`,
    `t.equal(late, true);`,
  ].join('\n'));
  // Through `env`, as nodeChild (node-options.ts) does: tap's hook in this process rewrites the
  // NODE_OPTIONS and _TAPJS_PROCESSINFO_EXCLUDE_ (node_modules by default) of every child it spawns.
  const settings = [`NODE_OPTIONS=${env.NODE_OPTIONS ?? ''}`, 'TAP_CHILD_ID=1', '_TAPJS_PROCESSINFO_EXCLUDE_=/$./'];
  const run = spawnSync('/usr/bin/env', [...settings, process.execPath, '--enable-source-maps', `--import=${PROCESS_INFO_HOOK}`, join(dir, file)], {
    cwd: dir, encoding: 'utf8', env, timeout: 60_000,
  });
  const line = run.stdout.split('\n').find((l) => l.startsWith('FILES '));
  return { status: run.status, output: `${run.stdout}${run.stderr}`, files: line ? (JSON.parse(line.slice(6)) as string[]) : [] };
}

const fromTap = (file: string) => /node_modules[\\/](tap|@tapjs[\\/]core)[\\/]/.test(file);
const withoutNodeOptions = () => {
  const { NODE_OPTIONS: _tapsOwn, ...env } = process.env;
  return env;
};

t.test('with tap-first.ts, tap and the test file\'s static imports are loaded before tap\'s process-info hook; a dynamic import still passes through it', async (t) => {
  const seen = await runAsTapDoes(t, tapEnv(withoutNodeOptions()));
  t.equal(seen.status, 0, 'the file passes');
  if (seen.status !== 0) t.comment(seen.output);
  t.ok(seen.files.some((f) => f.endsWith('late-module.mjs')), 'the hook saw the module imported in the body');
  t.notOk(seen.files.some((f) => f.endsWith('own-module.mjs')), 'not the one imported statically');
  t.same(seen.files.filter(fromTap), [], 'nor any of tap\'s');
});

t.test('without it, tap\'s modules and the file\'s own go through the hook', async (t) => {
  const seen = await runAsTapDoes(t, withoutNodeOptions());
  t.equal(seen.status, 0, 'the file passes');
  if (seen.status !== 0) t.comment(seen.output);
  t.ok(seen.files.some((f) => f.endsWith('own-module.mjs')), 'the hook saw the test file\'s static import');
  t.ok(seen.files.filter(fromTap).length > 10, `the hook saw ${seen.files.filter(fromTap).length} of tap's modules`);
});

t.test('outside a test file\'s own process it loads nothing', async (t) => {
  // The processes the tests start inherit NODE_OPTIONS: one whose main file is not a test file
  // loads tap (if at all) through the hook, as it would without tap-first.ts.
  const seen = await runAsTapDoes(t, tapEnv(withoutNodeOptions()), 'server.mjs');
  t.equal(seen.status, 0, 'the file passes');
  if (seen.status !== 0) t.comment(seen.output);
  t.ok(seen.files.filter(fromTap).length > 10, `the hook saw ${seen.files.filter(fromTap).length} of tap's modules`);
});

t.test('the import statements a compiled test file opens with, in their order', async (t) => {
  const source = [
    "import t from 'tap';",
    "import { a, b, } from '../helpers/server.js';",
    '// a comment between them',
    'import {',
    '  c,',
    "} from './multi-line.js';",
    '/* and a block comment */',
    "import './side-effect.js';",
    '',
    '// What follows is not scanned:',
    "const later = await import('./dynamic.js');",
    'const page = `',
    "import { h } from 'preact';",
    "import { useRoute } from './router.ts';",
    '`;',
    "import { late } from './late.js';",
  ].join('\n');
  t.same(staticImports(source), ['tap', '../helpers/server.js', './multi-line.js', './side-effect.js']);
  t.same(staticImports('#!/usr/bin/env node\nimport x from "y";'), [], 'nothing past a first line that is not an import');
});
