import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { quickFiles, SLOW_FILES } from './quick.js';
import { REPO_ROOT } from './server.js';

// `npm run test:quick`'s files: every test file but the listed slow ones. A listed file that
// was moved or renamed would silently join the quick run, so each must exist.

t.test('every slow file named exists as a test source', async (t) => {
  t.ok(SLOW_FILES.length > 0, 'some files are left to the full run');
  for (const file of SLOW_FILES) t.ok(file.endsWith('.test.ts') && existsSync(join(REPO_ROOT, file)), `${file} exists`);
});

t.test('the quick run is every built test file but the slow ones', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'updater-quick-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const slow = SLOW_FILES[0]!.replace(/^test\//, '').replace(/\.ts$/, '.js');
  for (const file of [slow, 'x/fast.test.js', 'a.test.js', 'helpers/fixture.js']) {
    await mkdir(join(root, 'dist', 'test', file, '..'), { recursive: true });
    await writeFile(join(root, 'dist', 'test', file), '');
  }
  t.same(quickFiles(root), ['dist/test/a.test.js', 'dist/test/x/fast.test.js']);
});
