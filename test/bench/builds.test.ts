import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { spawn } from 'node:child_process';
import { againstArgs, buildsFor, collectWarnings, comparisonRows, processCpuSeconds, reportWarnings, THIS_ROOT, withoutAgainst, writePortableKeyFile } from '../../bench/builds.js';
import { readPrivateKeyFile } from '../../src/shared/signing.js';

// `--against`: the command line, the builds it names, and the rows that compare them. A wrong
// pairing here would print one build's figure under another's name.

t.test('reads --against in both spellings and leaves the suite names', async (t) => {
  const argv = ['heartbeat', '--against', 'before=/a', 'coap', '--against=/b', '--quick'];
  t.same(againstArgs(argv), ['before=/a', '/b']);
  t.same(withoutAgainst(argv), ['heartbeat', 'coap', '--quick']);
  t.same(againstArgs(['heartbeat']), []);
  t.throws(() => againstArgs(['heartbeat', '--against']), /needs a path/);
  t.throws(() => againstArgs(['--against', '--quick']), /needs a path/);
});

t.test('names each build, refuses a checkout that is not built and two builds of one name', async (t) => {
  const builds = buildsFor([`old=${THIS_ROOT}`]);
  t.same(builds.map((b) => [b.name, b.root]), [['this', THIS_ROOT], ['old', THIS_ROOT]]);
  t.match(builds[0]!.commit, /^([0-9a-f]{7,}|\?)$/);
  const empty = await mkdtemp(join(tmpdir(), 'updater-builds-'));
  t.teardown(() => rm(empty, { recursive: true, force: true }));
  t.throws(() => buildsFor([empty]), /has no bin\/updater\.js/);
  t.throws(() => buildsFor([`this=${THIS_ROOT}`]), /two builds are named this/);
});

t.test('compares every build with the baseline, then each later build with each earlier one, per round', async (t) => {
  const builds = [{ name: 'this', root: '/x', commit: 'c3' }, { name: 'before', root: '/a', commit: 'c1' }, { name: 'after', root: '/b', commit: 'c2' }];
  const values: Record<string, number[]> = { this: [30, 60], before: [10, 40], after: [20, 30] };
  const rows = comparisonRows('up-to-date heartbeat', 'req/s', builds, (name) => values[name]!, { name: 'bare uWS', values: [100, 100] }, { min: 0.5 });
  t.same(rows.map((r) => r.name), [
    'up-to-date heartbeat req/s, before (c1) / bare uWS',
    'up-to-date heartbeat req/s, after (c2) / bare uWS',
    'up-to-date heartbeat req/s, this (c3) / bare uWS',
    'up-to-date heartbeat req/s, after / before',
    'up-to-date heartbeat req/s, this / before',
    'up-to-date heartbeat req/s, this / after',
  ]);
  t.same(rows[0]!.goal, { min: 0.5 });
  t.equal(rows[3]!.goal, undefined);
  // this / before: rounds 3.0 and 1.5.
  t.same(rows[4]!.rounds, { min: 1.5, max: 3, count: 2 });
  t.equal(rows[4]!.value, 2.25);
});

t.test('a portable key loads in this build; CPU seconds of a process come from /proc', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'updater-builds-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const path = await writePortableKeyFile(join(dir, 'k'));
  t.match(await readFile(path, 'utf8'), /^updater-ed25519-private-key\n[0-9a-f]{64}\n$/);
  t.equal((await readPrivateKeyFile(path)).length, 32);
  const spent = processCpuSeconds(process.pid);
  t.ok(spent > 0 && Number.isFinite(spent));
});

t.test('keeps the warnings and errors a server logs, not its info lines', async (t) => {
  const lines = [
    { level: 30, msg: 'server started' }, { level: 40, msg: 'actor restarted' }, { level: 50, msg: 'failed' }, { level: 30, msg: 'level 400 is not one' },
  ].map((l) => JSON.stringify(l)).join('\n');
  const child = spawn(process.execPath, ['-e', `process.stdout.write(${JSON.stringify(lines + '\n')})`], { stdio: ['ignore', 'pipe', 'pipe'] });
  const warnings = collectWarnings(child);
  await new Promise((resolve) => child.once('close', resolve));
  t.same(warnings().map((l) => JSON.parse(l).msg), ['actor restarted', 'failed']);
  const record: Record<string, unknown> = {};
  reportWarnings(new Map([['before', warnings]]), record);
  t.equal(record.before_warnings_logged, 2);
});
