import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import engine from 'updater-delta-engine';
import { nativeDiff } from '../../src/actors/diff-pool/native-engine.js';
import runDiffTask from '../../src/actors/diff-pool/task.js';
import { firmware, nextVersion, sha256Hex } from '../helpers/fixture.js';

// The engine runs in a child process: its crash or failure fails one generation with
// DIFF_FAILED and this process goes on; a patch that does not rebuild the target is refused.

async function scratch(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'updater-engine-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function fakeProgram(dir: string, body: string): Promise<string> {
  const path = join(dir, 'fake-engine.sh');
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

t.test('an engine killed by a signal fails the generation, not this process', async (t) => {
  const dir = await scratch(t);
  const program = await fakeProgram(dir, 'kill -SEGV $$');
  await t.rejects(nativeDiff(join(dir, 'a'), join(dir, 'b'), join(dir, 'p'), program), { code: 'DIFF_FAILED', details: { signal: 'SIGSEGV' } });
});

t.test('a mismatch reported by the engine is a DIFF_FAILED with its code', async (t) => {
  const dir = await scratch(t);
  const program = await fakeProgram(dir, `echo '{"code":"MISMATCH","message":"the patch does not rebuild the target (from byte 0)"}' >&2; exit 2`);
  await t.rejects(nativeDiff(join(dir, 'a'), join(dir, 'b'), join(dir, 'p'), program), { code: 'DIFF_FAILED', details: { engineCode: 'MISMATCH' } });
});

t.test('the streaming verification catches a target that differs from the patched bytes', async (t) => {
  const dir = await scratch(t);
  const v1 = firmware(200_000, 'iso-1');
  const v2 = nextVersion(v1, 'iso-2');
  const other = Buffer.from(v2);
  other[other.length - 5] = (other[other.length - 5] ?? 0) ^ 1;
  await writeFile(join(dir, 'v1'), v1);
  await writeFile(join(dir, 'v2'), v2);
  await writeFile(join(dir, 'other'), other);
  engine.diff(join(dir, 'v1'), join(dir, 'v2'), join(dir, 'patch'));
  t.ok(engine.verify(join(dir, 'v1'), join(dir, 'patch'), join(dir, 'v2')), 'the patch rebuilds v2');
  t.throws(() => engine.verify(join(dir, 'v1'), join(dir, 'patch'), join(dir, 'other')), { code: 'DELTA_MISMATCH' });
  t.throws(() => engine.verify(join(dir, 'v1'), join(dir, 'v1'), join(dir, 'v2')), { code: 'DELTA_CORRUPT_PATCH' }, 'a file that is no patch is refused');
});

t.test('a delta task refuses a target that does not hash to its name, and leaves nothing behind', async (t) => {
  const dir = await scratch(t);
  const v1 = firmware(100_000, 'task-1');
  const v2 = nextVersion(v1, 'task-2');
  await writeFile(join(dir, 'v1'), v1);
  await writeFile(join(dir, 'v2'), v2);
  const out = join(dir, 'out');
  const work = join(dir, 'work');
  await Promise.all([out, work].map((path) => mkdir(path)));
  const base = { kind: 'delta', sourcePath: join(dir, 'v1'), sourceHash: sha256Hex(v1), targetPath: join(dir, 'v2'), engine: 'native', outDir: out, workDir: work } as const;
  const bad = await runDiffTask({ ...base, targetHash: sha256Hex(v1) });
  t.equal(bad.ok, false);
  if (!bad.ok) t.equal(bad.error.code, 'STORE_CORRUPT');
  t.same(await readdir(out), [], 'no output file');
  t.same(await readdir(work), [], 'no scratch file');
  const good = await runDiffTask({ ...base, targetHash: sha256Hex(v2) });
  t.equal(good.ok, true, 'the same task with the right hash succeeds');
  if (good.ok) await rm(good.result.tempPath);
  t.same(await readdir(work), [], 'no scratch file after success either');
});
