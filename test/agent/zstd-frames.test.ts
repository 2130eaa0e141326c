import { execFileSync } from 'node:child_process';
import { open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { compress } from '@mongodb-js/zstd';
import t from 'tap';
import { decompressFileInto } from '../../agent/zstd-frames.js';
import { firmware, makeFixture } from '../helpers/fixture.js';
import { needs } from '../helpers/system-tools.js';

async function decompressFile(input: string, output: string): Promise<{ size: number; frames: number }> {
  const handle = await open(output, 'w');
  let frames = 0;
  try {
    return { size: await decompressFileInto(input, handle, () => frames++), frames };
  } finally {
    await handle.close();
  }
}

t.test('concatenated frames are decompressed one at a time into the original bytes', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const parts = [firmware(300_000, 'z1'), Buffer.alloc(200_000, 7), firmware(1000, 'z3')];
  const frames = await Promise.all(parts.map((p) => compress(p, 3)));
  const zst = join(fixture.dir, 'in.zst');
  await writeFile(zst, Buffer.concat(frames));
  const result = await decompressFile(zst, join(fixture.dir, 'out'));
  t.same(result, { size: 501_000, frames: 3 });
  t.ok((await readFile(join(fixture.dir, 'out'))).equals(Buffer.concat(parts)));
});

t.test('streams made by stock zstd (checksums, skippable frames) are read too', needs('zstd'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const data = firmware(500_000, 'stock');
  await writeFile(join(fixture.dir, 'a'), data.subarray(0, 250_000));
  await writeFile(join(fixture.dir, 'b'), data.subarray(250_000));
  execFileSync('zstd', ['-q', '--check', join(fixture.dir, 'a'), join(fixture.dir, 'b')]);
  const skippable = Buffer.alloc(8 + 5);
  skippable.writeUInt32LE(0x184d2a5e, 0);
  skippable.writeUInt32LE(5, 4);
  const zst = join(fixture.dir, 'stock.zst');
  await writeFile(zst, Buffer.concat([await readFile(join(fixture.dir, 'a.zst')), skippable, await readFile(join(fixture.dir, 'b.zst'))]));
  const result = await decompressFile(zst, join(fixture.dir, 'out'));
  t.equal(result.frames, 2, 'the skippable frame carries no data');
  t.ok((await readFile(join(fixture.dir, 'out'))).equals(data));
});

t.test('a truncated or foreign stream is refused with a stable code', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const whole = await compress(firmware(100_000, 'trunc'), 3);
  const truncated = join(fixture.dir, 'truncated.zst');
  await writeFile(truncated, whole.subarray(0, whole.length - 10));
  await t.rejects(decompressFile(truncated, join(fixture.dir, 'o1')), { code: 'AGENT_RECONSTRUCTION_MISMATCH', message: /truncated/ });
  const foreign = join(fixture.dir, 'foreign.zst');
  await writeFile(foreign, Buffer.from('PK\u0003\u0004 not zstd at all'));
  await t.rejects(decompressFile(foreign, join(fixture.dir, 'o2')), { code: 'AGENT_RECONSTRUCTION_MISMATCH', message: /no frame magic/ });
  const empty = join(fixture.dir, 'empty.zst');
  await writeFile(empty, '');
  await t.rejects(decompressFile(empty, join(fixture.dir, 'o3')), { code: 'AGENT_RECONSTRUCTION_MISMATCH' });
});
