import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import engine from 'updater-delta-engine';
import { prng } from '../../bench/pairs.js';
import { checkPair, edgePairs, mutate, randomPair } from '../helpers/delta-fuzz.js';
import { REPO_ROOT } from '../helpers/server.js';

// The bsdiff-lzma patch format (docs/protocol.md, "Patch formats"): every patch the engine
// writes rebuilds its target through the engine's streaming apply, and a patch damaged in
// any way (truncated, one byte flipped anywhere, bytes appended) is refused with the code a
// broken BSDIFF40 patch gets, DELTA_CORRUPT_PATCH, never rebuilt into other bytes silently.

const run = promisify(execFile);

async function scratch(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'updater-lzma-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

t.test('edge cases and random pairs rebuild through bsdiff-lzma', async (t) => {
  const dir = await scratch(t);
  const pairs = [...edgePairs(), ...Array.from({ length: 24 }, (_, i) => randomPair(100 + i))];
  for (const pair of pairs) await checkPair(dir, pair, 'bsdiff-lzma');
  t.pass(`${pairs.length} pairs rebuilt`);
});

t.test('the two formats agree on the rebuilt bytes and bsdiff-lzma is the smaller on an edited file', async (t) => {
  const dir = await scratch(t);
  const random = prng(77);
  const old = Buffer.from(Array.from({ length: 200_000 }, () => Math.floor(random() * 16)));
  await writeFile(join(dir, 'old'), old);
  await writeFile(join(dir, 'new'), mutate(old, random, 30));
  const sizes: Record<string, number> = {};
  for (const format of ['bsdiff40', 'bsdiff-lzma']) {
    const { stdout } = await run(engine.programPath, ['diff', join(dir, 'old'), join(dir, 'new'), join(dir, format), format]);
    sizes[format] = (JSON.parse(stdout) as { patchBytes: number }).patchBytes;
  }
  t.equal((await readFile(join(dir, 'bsdiff-lzma'))).subarray(0, 8).toString('latin1'), 'BSDLZMA1', 'the magic');
  t.equal((await readFile(join(dir, 'bsdiff40'))).subarray(0, 8).toString('latin1'), 'BSDIFF40', 'the default stays BSDIFF40');
  t.ok(sizes['bsdiff-lzma']! < sizes.bsdiff40!, `${sizes['bsdiff-lzma']} < ${sizes.bsdiff40} bytes`);
  await t.rejects(run(engine.programPath, ['diff', join(dir, 'old'), join(dir, 'new'), join(dir, 'x'), 'courgette']), /USAGE/, 'an unknown format is refused');
});

t.test('a damaged bsdiff-lzma patch is refused as corrupt', async (t) => {
  const dir = await scratch(t);
  const random = prng(5);
  const old = Buffer.from(Array.from({ length: 30_000 }, () => Math.floor(random() * 4)));
  const next = mutate(old, random, 8);
  await writeFile(join(dir, 'old'), old);
  await writeFile(join(dir, 'new'), next);
  await run(engine.programPath, ['diff', join(dir, 'old'), join(dir, 'new'), join(dir, 'good'), 'bsdiff-lzma']);
  const good = await readFile(join(dir, 'good'));
  const damaged: Array<[string, Buffer]> = [['bytes appended', Buffer.concat([good, Buffer.from([0])])]];
  for (let cut = 0; cut < good.length; cut += Math.max(1, Math.floor(good.length / 40))) damaged.push([`cut to ${cut} bytes`, good.subarray(0, cut)]);
  // Every header byte, then bytes spread over the three streams (every one would take minutes).
  const stride = Math.ceil(good.length / 1200);
  for (let at = 0; at < good.length; at += at < 40 ? 1 : stride) {
    const flipped = Buffer.from(good);
    flipped[at] = flipped[at]! ^ (1 << (at % 8));
    damaged.push([`bit flipped at byte ${at}`, flipped]);
  }
  const outcomes = new Map<string, number>();
  for (const [name, bytes] of damaged) {
    await writeFile(join(dir, 'bad'), bytes);
    let code = 'rebuilt';
    try {
      engine.patch(join(dir, 'old'), join(dir, 'bad'), join(dir, 'out'));
      if (!(await readFile(join(dir, 'out'))).equals(next)) code = 'rebuilt other bytes';
    } catch (err) {
      code = (err as NodeJS.ErrnoException).code ?? 'no code';
    }
    if (code !== 'DELTA_CORRUPT_PATCH') t.fail(`${name}: ${code}`);
    outcomes.set(code, (outcomes.get(code) ?? 0) + 1);
  }
  t.same([...outcomes], [['DELTA_CORRUPT_PATCH', damaged.length]], `all ${damaged.length} damaged patches are refused as corrupt`);
});

t.test('the worked example of docs/protocol.md decodes to the new file it describes', async (t) => {
  const dir = await scratch(t);
  const doc = await readFile(join(REPO_ROOT, 'docs', 'protocol.md'), 'utf8');
  const block = /<!-- bsdiff-lzma example -->\n```\n([\s\S]*?)\n```/.exec(doc)?.[1] ?? '';
  const patch = Buffer.from(block.replace(/\s+/g, ''), 'hex');
  t.equal(patch.length, 212, 'the 212 bytes the text announces');
  const old = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', 'latin1');
  await writeFile(join(dir, 'old'), old);
  await writeFile(join(dir, 'patch'), patch);
  engine.patch(join(dir, 'old'), join(dir, 'patch'), join(dir, 'new'));
  t.equal((await readFile(join(dir, 'new'))).toString('latin1'), 'ABCDEfGHIJKLMNOPQRSTUVWXYZ0123456789!!');
});
