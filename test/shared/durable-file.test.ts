import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { openTemp, publishNoOverwrite, removeLeftoverTemps, replaceFileDurably } from '../../src/shared/durable-file.js';

t.test('durable files', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'durable-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));

  const first = await openTemp(dir);
  await first.handle.writeFile('one');
  await first.handle.close();
  t.equal(await publishNoOverwrite(first.path, join(dir, 'file')), true);
  const second = await openTemp(dir);
  await second.handle.writeFile('two');
  await second.handle.close();
  t.equal(await publishNoOverwrite(second.path, join(dir, 'file')), false, 'an existing name is never overwritten');
  t.equal(await readFile(join(dir, 'file'), 'utf8'), 'one');
  t.same(await readdir(dir), ['file'], 'the losing temporary is removed');

  await replaceFileDurably(join(dir, 'state.json'), '{"v":1}');
  await replaceFileDurably(join(dir, 'state.json'), '{"v":2}');
  t.equal(await readFile(join(dir, 'state.json'), 'utf8'), '{"v":2}');

  await writeFile(join(dir, '.tmp-123-abc'), 'half');
  t.equal(await removeLeftoverTemps(dir), 1);
  t.same((await readdir(dir)).sort(), ['file', 'state.json']);
});
