import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { OpenFiles } from '../../../../src/actors/coap/device/open-files.js';

// The CoAP front-end keeps a transfer's file open between its blocks: one open per file while
// blocks keep coming, closed when idle, and a bounded number open at once.

async function fixture(t: Test, count: number): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'open-files-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const paths = Array.from({ length: count }, (_, i) => join(dir, `f${i}`));
  await Promise.all(paths.map((p, i) => writeFile(p, Buffer.alloc(64, i))));
  return paths;
}

const readByte = (files: OpenFiles, path: string, at = 0) => files.use(path, async (h) => {
  const b = Buffer.alloc(1);
  await h.read(b, 0, 1, at);
  return b[0];
});

t.test('blocks of one file share one open handle', async (t) => {
  const [path] = await fixture(t, 1);
  const files = new OpenFiles();
  t.teardown(() => files.closeAll());
  const handles = new Set();
  for (let i = 0; i < 20; i++) await files.use(path!, async (h) => void handles.add(h));
  t.equal(handles.size, 1, 'twenty reads, one FileHandle');
  t.equal(files.openCount, 1);
});

t.test('idle files are closed; a removed file is then gone', async (t) => {
  const [path] = await fixture(t, 1);
  let clock = 0;
  const files = new OpenFiles(() => clock);
  t.teardown(() => files.closeAll());
  t.equal(await readByte(files, path!), 0);
  await unlink(path!);
  t.equal(await readByte(files, path!), 0, 'still read through the open handle');
  clock += 10_000;
  await t.resolves(new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + 30_000;
    const poll = () => (files.openCount === 0 ? resolve() : Date.now() > deadline ? reject(new Error('never closed')) : setTimeout(poll, 100));
    poll();
  }), 'the idle handle is closed by the sweep');
  await t.rejects(readByte(files, path!), { code: 'ENOENT' }, 'the next open fails as open() does');
  t.equal(files.openCount, 0, 'a failed open is not kept');
});

t.test('at most 32 files stay open; files in use are never closed', async (t) => {
  const paths = await fixture(t, 40);
  const files = new OpenFiles();
  t.teardown(() => files.closeAll());
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const busy = files.use(paths[0]!, async (h) => {
    await held;
    const b = Buffer.alloc(1);
    await h.read(b, 0, 1, 0);
    return b[0];
  });
  for (const [i, p] of paths.slice(1).entries()) t.equal(await readByte(files, p), (i + 1) % 256);
  t.ok(files.openCount <= 32, `${files.openCount} open`);
  release();
  t.equal(await busy, 0, 'the file in use was read after 39 others came and went');
});
