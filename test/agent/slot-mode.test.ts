import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import bsdiff from 'bsdiff-node';
import t from 'tap';
import { applyDelta, applyFull } from '../../agent/apply.js';
import { zstdCompress } from '../../src/actors/diff-pool/zstd.js';
import { firmware, makeFixture, nextVersion } from '../helpers/fixture.js';

// The rebuilt slot takes the permission bits of the slot it replaces, in both modes: a
// device whose slot is an executable must still be able to run the new one.
t.test('a slot rebuilt from a delta or a full file keeps the mode of the slot it replaces', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const slotDir = join(fixture.dir, 'slots');
  await mkdir(slotDir);
  const v1 = firmware(200_000, 'mode-1');
  const v2 = nextVersion(v1, 'mode-2');
  const v1Path = join(fixture.dir, 'v1.bin');
  const v2Path = join(fixture.dir, 'v2.bin');
  await writeFile(v1Path, v1);
  await writeFile(v2Path, v2);
  bsdiff.diffSync(v1Path, v2Path, join(fixture.dir, 'patch'));
  const deltaZst = join(fixture.dir, 'delta.zst');
  await writeFile(deltaZst, await zstdCompress(await readFile(join(fixture.dir, 'patch')), 3));
  const fullZst = join(fixture.dir, 'full.zst');
  await writeFile(fullZst, await zstdCompress(v2, 3));

  const slotA = join(slotDir, 'slot-a');
  const slotB = join(slotDir, 'slot-b');
  await writeFile(slotA, v1);
  await chmod(slotA, 0o755);
  // An older slot-b left 0644 must not keep its own mode either.
  await writeFile(slotB, Buffer.alloc(10));
  await chmod(slotB, 0o644);
  await applyDelta(slotDir, deltaZst, slotA, slotB);
  t.equal((await stat(slotB)).mode & 0o7777, 0o755, 'delta mode: slot-b is 0755 like slot-a');
  t.same(await readFile(slotB), v2, 'and holds v2');

  await chmod(slotA, 0o750);
  await applyFull(fullZst, slotA, slotB);
  t.equal((await stat(slotB)).mode & 0o7777, 0o750, 'full mode: slot-b takes 0750 from slot-a');
  t.same(await readFile(slotB), v2);
});
