import { execFileSync } from 'node:child_process';
import { mkdir, open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import runDiffTask from '../../../src/actors/diff-pool/task.js';
import { makeFixture, sha256Hex } from '../../helpers/fixture.js';
import { needs } from '../../helpers/system-tools.js';

// store.full_compression_level must reach zstd: a higher level gives a smaller full file,
// and stock zstd restores each one.
t.test('the full-file compression level changes the size, and stock zstd restores every level', needs('zstd'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  // Real machine code compresses the way firmware does: the first 768 KiB of node itself.
  const handle = await open(process.execPath, 'r');
  const code = Buffer.alloc(768 * 1024);
  await handle.read(code, 0, code.length, 0);
  await handle.close();
  const target = await fixture.writeBinary('target.bin', code);
  const sizes: Record<number, number> = {};
  for (const level of [1, 9, 19]) {
    const outDir = join(fixture.dir, `out-${level}`);
    await mkdir(outDir);
    const outcome = await runDiffTask({ kind: 'full', targetPath: target.path, targetHash: target.hash, outDir, level });
    if (!outcome.ok) throw new Error(JSON.stringify(outcome.error));
    sizes[level] = outcome.result.size;
    const restored = join(fixture.dir, `restored-${level}.bin`);
    execFileSync('zstd', ['-d', '-q', '-f', outcome.result.tempPath, '-o', restored]);
    t.equal(sha256Hex(await readFile(restored)), target.hash, `level ${level} restores the target`);
  }
  t.ok(sizes[9]! < sizes[1]!, `level 9 (${sizes[9]} bytes) is smaller than level 1 (${sizes[1]})`);
  t.ok(sizes[19]! < sizes[9]!, `level 19 (${sizes[19]} bytes) is smaller than level 9 (${sizes[9]})`);
});
