import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { fileTimes, slowestLines, timeOf } from './slowest.js';

// The slowest-files list that closes `npm test`, read from tap's per-file TAP copies: only a
// file's top-level time counts (its subtests carry indented times of their own), a file that
// never closed has none, and an earlier run's copies are left out.

const fileTap = (ms: string) => ['# Subtest: a subtest', '    ok 1 - fine', '    1..1', 'ok 1 - a subtest # time=9000ms', '', '1..1', `# time=${ms}ms`, ''].join('\n');

t.test('a file time is its last top-level time line', async (t) => {
  t.equal(timeOf(fileTap('1200.5')), 1.2005);
  t.equal(timeOf('# Subtest: killed\n    ok 1 - fine\n    # time=5ms\n'), undefined, 'a file killed before it closed has no time');
});

t.test('the run directory gives this run only, slowest first', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'updater-slowest-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, 'dist/test/x'), { recursive: true });
  await writeFile(join(dir, 'dist/test/x/a.test.js.tap'), fileTap('1200'));
  await writeFile(join(dir, 'dist/test/b.test.js.tap'), fileTap('30000'));
  await writeFile(join(dir, 'dist/test/c.test.js.tap'), fileTap('15'));
  await writeFile(join(dir, 'dist/test/old.test.js.tap'), fileTap('99000'));
  const since = Date.now() - 60_000;
  await utimes(join(dir, 'dist/test/old.test.js.tap'), new Date(since - 1000), new Date(since - 1000));
  const lines = slowestLines(fileTimes(dir, since), 2);
  t.same(lines, [
    "# the 2 slowest of 3 test files (each one's own time; 31 s in all):",
    '#     30.0 s  dist/test/b.test.js',
    '#      1.2 s  dist/test/x/a.test.js',
  ]);
  t.same(fileTimes(join(dir, 'missing'), since), [], 'no results directory: no files');
  t.same(slowestLines([]), [], 'a run without files prints nothing');
});
