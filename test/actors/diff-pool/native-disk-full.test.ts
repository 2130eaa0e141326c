import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import runDiffTask from '../../../src/actors/diff-pool/task.js';
import { firmware, makeFixture, nextVersion } from '../../helpers/fixture.js';
import { canMount, mountSmallDisk } from '../../helpers/tmpfs.js';

// The native engine's DISK_FULL is the store's condition: STORE_FULL (507, "full" on /health),
// not DIFF_FAILED, which said nothing a device or an operator could act on.
t.test('a delta that does not fit fails with STORE_FULL, not DIFF_FAILED', { skip: !canMount && 'needs root to mount a tmpfs' }, async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(2_000_000, 'ndf-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'ndf-v2'));
  const disk = await mountSmallDisk(t, join(fixture.dir, 'disk'), 4);
  await disk.fillLeaving(0);
  const outcome = await runDiffTask({
    kind: 'delta', engine: 'native', sourcePath: v1.path, sourceHash: v1.hash, targetPath: v2.path, targetHash: v2.hash, outDir: disk.dir, workDir: disk.dir,
  });
  t.equal(outcome.ok, false);
  t.equal(!outcome.ok && outcome.error.code, 'STORE_FULL', !outcome.ok ? outcome.error.message : 'generated');
});
