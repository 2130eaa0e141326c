import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { agentFile } from '../../src/cli.js';
import { newestModule, ourClasses, renamedClasses } from '../helpers/bundles.js';
import { nodeChild } from '../helpers/node-options.js';
import { REPO_ROOT, UPDATER_BIN } from '../helpers/server.js';

// `updater agent` runs the agent bundled into one file by `npm run build` (tools/build.js,
// src/cli.ts), which every test that spawns an agent then exercises. Here: the bundle is there
// and current, the command runs it, and UPDATER_UNBUNDLED=1 runs the separate modules, which no
// other test does.

const DIST_AGENT = join(REPO_ROOT, 'dist', 'agent');

function withUnbundled(t: Test, value: string | undefined): void {
  const before = process.env.UPDATER_UNBUNDLED;
  if (value === undefined) delete process.env.UPDATER_UNBUNDLED;
  else process.env.UPDATER_UNBUNDLED = value;
  t.teardown(() => (before === undefined ? delete process.env.UPDATER_UNBUNDLED : (process.env.UPDATER_UNBUNDLED = before)));
}

t.test('the agent has a bundle newer than every compiled module it is made of, and agentFile names it', async (t) => {
  withUnbundled(t, undefined);
  const file = fileURLToPath(agentFile());
  t.equal(file, join(DIST_AGENT, 'index.bundle.mjs'));
  t.ok(statSync(file).mtimeMs >= newestModule('src', 'agent'), 'npm run build remade it');
});

t.test('UPDATER_UNBUNDLED=1 names the agent\'s own index.js', async (t) => {
  withUnbundled(t, '1');
  t.equal(fileURLToPath(agentFile()), join(DIST_AGENT, 'index.js'));
});

t.test('the bundle defines no function names at run time, and our own classes keep theirs', async (t) => {
  const bundle = readFileSync(join(DIST_AGENT, 'index.bundle.mjs'), 'utf8');
  t.notMatch(bundle, /\b__name\(/);
  const ours = ourClasses('src', 'agent');
  t.ok(ours.has('UpdaterError'), `our classes are found (${ours.size})`);
  t.same(renamedClasses(bundle, ours), []);
});

t.test('`updater agent` answers from either, and refuses a configuration it cannot read alike', async (t) => {
  for (const unbundled of ['0', '1']) {
    const node = nodeChild([UPDATER_BIN, 'agent', '--help'], { UPDATER_UNBUNDLED: unbundled });
    t.match(execFileSync(node.command, node.args, { env: node.env, encoding: 'utf8' }), /usage: updater agent/, `UPDATER_UNBUNDLED=${unbundled}: its help`);
    const missing = nodeChild([UPDATER_BIN, 'agent', '--config', join(DIST_AGENT, 'no-such.yaml'), '--once'], { UPDATER_UNBUNDLED: unbundled });
    const err = t.throws(() => execFileSync(missing.command, missing.args, { env: missing.env, encoding: 'utf8', stdio: 'pipe' })) as { status?: number; stderr?: string };
    t.not(err.status, 0, `UPDATER_UNBUNDLED=${unbundled}: a missing configuration fails`);
    t.match(err.stderr ?? '', /no-such\.yaml/, 'and names the file');
  }
});
