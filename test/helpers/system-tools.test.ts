import { spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { skipLine } from './run-hooks.js';
import { findCommand, toolPath } from './system-tool-list.js';
import { SKIPS_DIR } from './test-run.js';

// The helper that lets a test run without a system tool npm cannot bring: found or not, skipped
// with the package to install, or failed under CI=true. Played on a PATH that holds only what
// each case puts there, so the machine's own tools (installed or not) change nothing.

async function scratch(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'updater-tools-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

t.test('a tool is found on PATH only as an executable file', async (t) => {
  const dir = await scratch(t);
  await writeFile(join(dir, 'zstd'), '#!/bin/sh\n');
  await chmod(join(dir, 'zstd'), 0o755);
  await writeFile(join(dir, 'bspatch'), 'not executable');
  await mkdir(join(dir, 'nginx'));
  await chmod(join(dir, 'nginx'), 0o755);
  t.equal(findCommand('zstd', { PATH: `/nonexistent:${dir}` }, []), join(dir, 'zstd'));
  t.equal(findCommand('bspatch', { PATH: dir }, []), undefined, 'a file without the x bit is not a tool');
  t.equal(findCommand('nginx', { PATH: dir }, []), undefined, 'nor is a directory');
  t.equal(findCommand('zstd', { PATH: '' }, []), undefined, 'an empty PATH finds nothing');
  t.equal(findCommand('zstd', { PATH: '' }, [dir]), join(dir, 'zstd'), 'the sbin directories are searched after PATH');
});

t.test('UPDATER_TEST_NGINX and UPDATER_TEST_CHROMIUM choose the program, and one that is not there is missing', async (t) => {
  const dir = await scratch(t);
  await writeFile(join(dir, 'my-nginx'), '#!/bin/sh\n');
  await chmod(join(dir, 'my-nginx'), 0o755);
  t.equal(toolPath('nginx', { PATH: '', UPDATER_TEST_NGINX: join(dir, 'my-nginx') }, []), join(dir, 'my-nginx'));
  t.equal(toolPath('chromium', { PATH: dir, UPDATER_TEST_CHROMIUM: join(dir, 'gone') }, [dir]), undefined);
});

// Written to a temp dir, so it names its modules by URL.
const FILE = `
import t from ${JSON.stringify(import.meta.resolve('tap'))};
import { needs } from ${JSON.stringify(pathToFileURL(join(import.meta.dirname, 'system-tools.js')).href)};
t.test('uses the stock zstd and bspatch', needs('zstd', 'bspatch'), async (t) => {
  t.fail('ran without its tools');
});
t.test('uses no tool', async (t) => {
  t.pass('ran');
});
`;

/** The file above, run as tap runs a test file, on a PATH with no tool and no sbin tool either. */
async function runWithoutTools(t: { teardown(fn: () => Promise<void>): void }, env: NodeJS.ProcessEnv): Promise<{ status: number | null; out: string; runDir: string }> {
  const dir = await scratch(t);
  const runDir = join(dir, 'run');
  await mkdir(join(dir, 'empty'));
  await writeFile(join(dir, 'uses-tools.test.mjs'), FILE);
  const child = spawnSync(process.execPath, [join(dir, 'uses-tools.test.mjs')], {
    env: { PATH: join(dir, 'empty'), UPDATER_TEST_RUN_DIR: runDir, ...env },
    encoding: 'utf8',
  });
  return { status: child.status, out: `${child.stdout}${child.stderr}`, runDir };
}

t.test('without its tools a test is skipped, naming the Debian packages; the run\'s closing line counts it', async (t) => {
  const { status, out, runDir } = await runWithoutTools(t, {});
  t.equal(status, 0, `the file passes${status === 0 ? '' : `:\n${out}`}`);
  t.match(out, /# SKIP needs zstd, bspatch \(apt-get install bsdiff zstd\)/);
  t.match(out, /ok \d+ - uses no tool/, 'the file\'s other tests run');
  t.equal(skipLine(runDir), 'skipped 1 test for want of bspatch, zstd: apt-get install bsdiff zstd (CI=true fails on them instead)');
});

t.test('under CI=true a missing tool fails the file, naming the tool and its package', async (t) => {
  const { status, out, runDir } = await runWithoutTools(t, { CI: 'true' });
  t.not(status, 0, 'the file fails');
  t.match(out, /not ok \d+ - CI=true and a system tool is missing: needs zstd, bspatch \(apt-get install bsdiff zstd\)/);
  t.equal(skipLine(runDir), undefined, 'nothing is counted as skipped');
  await t.rejects(readdir(join(runDir, SKIPS_DIR)), 'and no skip is recorded');
});
