import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import t, { type Test } from 'tap';
import { createStoreMetrics } from '../../../src/actors/store-keeper/metrics.js';
import { ContentStore, type RunDiffTask } from '../../../src/actors/store-keeper/store.js';
import type { DiffTask } from '../../../src/messages/diff.js';
import type { StoreEvent } from '../../../src/messages/store.js';
import type { Config } from '../../../src/shared/config/types.js';
import { tempPathFor } from '../../../src/shared/durable-file.js';
import { createLogger } from '../../../src/shared/logger.js';
import { firmware, makeFixture, sha256Hex } from '../../helpers/fixture.js';

// The store's dispatch logic with the diff pool replaced by a function the test controls:
// no worker thread runs, every task is seen and finished by hand.

/** A diff "pool" whose tasks wait until the test lets them finish. */
function manualPool() {
  const tasks: { task: DiffTask; finish(): Promise<void>; fail(code: string): void }[] = [];
  const run: RunDiffTask = (task) => new Promise((resolve) => {
    tasks.push({
      task,
      finish: async () => {
        const tempPath = tempPathFor(task.outDir);
        const bytes = Buffer.from(`derived from ${task.targetHash}`);
        await writeFile(tempPath, bytes);
        resolve({ ok: true, result: { tempPath, size: bytes.length, hash: sha256Hex(bytes), durationMs: 1 } });
      },
      fail: (code) => resolve({ ok: false, error: { code, message: 'failed on purpose', name: 'UpdaterError' } as never }),
    });
  });
  return { tasks, run };
}

async function openStore(t: Test, run: RunDiffTask) {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const config = {
    store: { dir: join(fixture.dir, 'store'), targetCacheBytes: 0, hotDeltaCacheBytes: 0, deltaConcurrency: 1, deltaMaxSourceBytes: 0, fullCompressionLevel: 1, watchSettleMs: 100 },
    // The files a registered binary must not be (store-keeper/source-file.ts).
    signing: { privateKeyFile: fixture.keyPath }, admin: { tokenFile: fixture.tokenPath }, database: join(fixture.dir, 'updater.db'), webhooks: [],
  } as unknown as Config;
  const events: StoreEvent[] = [];
  const store = new ContentStore(config, createLogger('test', 'error'), createStoreMetrics(new Registry()), async (e) => {
    events.push(e);
  }, run);
  await store.open();
  const [a, b] = await Promise.all(['a', 'b'].map(async (seed) => {
    const bin = await fixture.writeBinary(`${seed}.bin`, firmware(4096, seed));
    return (await store.registerBinary(bin.path)).hash;
  }));
  return { store, events, a: a!, b: b! };
}

t.test('concurrent asks for one delta dispatch one task and share its result', async (t) => {
  const pool = manualPool();
  const { store, events, a, b } = await openStore(t, pool.run);
  const first = store.ensureDelta(a, b);
  const second = store.ensureDelta(a, b);
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(pool.tasks.length, 1, 'one task for the pair');
  t.equal(pool.tasks[0]!.task.kind, 'delta');
  await pool.tasks[0]!.finish();
  const [x, y] = await Promise.all([first, second]);
  t.same(x, y, 'both callers get the same file');
  t.ok(events.some((e) => e.type === 'transfer-ready'), 'the manifester hears of it');
  t.same(await store.ensureDelta(a, b), x, 'a later ask is answered from the index');
  t.equal(pool.tasks.length, 1, 'without another task');
});

t.test('a delta and a full file of the same target are different flights', async (t) => {
  const pool = manualPool();
  const { store, a, b } = await openStore(t, pool.run);
  const delta = store.ensureDelta(a, b);
  const full = store.ensureFull(b);
  await new Promise((resolve) => setImmediate(resolve));
  t.same(pool.tasks.map((x) => x.task.kind).sort(), ['delta', 'full']);
  await Promise.all(pool.tasks.map((x) => x.finish()));
  await Promise.all([delta, full]);
});

t.test('a failed task rejects every waiting caller with its code, and the next ask tries again', async (t) => {
  const pool = manualPool();
  const { store, a, b } = await openStore(t, pool.run);
  const asks = [store.ensureDelta(a, b), store.ensureDelta(a, b)];
  await new Promise((resolve) => setImmediate(resolve));
  pool.tasks[0]!.fail('STORE_CORRUPT');
  for (const ask of asks) await t.rejects(ask, { code: 'STORE_CORRUPT' });
  const again = store.ensureDelta(a, b);
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(pool.tasks.length, 2, 'not remembered as in flight');
  await pool.tasks[1]!.finish();
  await again;
});
