import { setTimeout as sleep } from 'node:timers/promises';
import { Registry } from 'prom-client';
import t from 'tap';
import { fullCollection } from '../../src/shared/garbage-collector.js';
import { createLogger } from '../../src/shared/logger.js';
import { mallocTrim, MallocTrimmer } from '../../src/supervisor/malloc-trimmer.js';

// Native memory freed between blocks that stay alive keeps its pages until malloc_trim gives
// them back, as the soak's diff threads' buffers did: 48 MiB of 96 KiB buffers (under glibc's
// mmap threshold, so they come from an arena), seven of every eight then freed.

const MIB = 1024 * 1024;
const GLIBC = 'trim' in mallocTrim() ? false : 'glibc\'s malloc_trim only';

async function fragmentedNativeMemory(): Promise<Buffer[]> {
  const buffersBefore = process.memoryUsage().arrayBuffers;
  const buffers: Buffer[] = [];
  for (let i = 0; i < 512; i++) buffers.push(Buffer.allocUnsafeSlow(96 * 1024).fill(i));
  const kept = buffers.filter((_, i) => i % 8 === 0);
  buffers.length = 0;
  fullCollection()();
  // V8 frees dead backing stores from a background task, and counts them out as it does. The
  // wait blocks this thread's event loop, so that a trimmer's check cannot run before the frees.
  const deadline = Date.now() + 10_000;
  const blocker = new Int32Array(new SharedArrayBuffer(4));
  while (Date.now() < deadline && process.memoryUsage().arrayBuffers > buffersBefore + 8 * MIB) Atomics.wait(blocker, 0, 0, 50);
  return kept;
}

async function counter(registry: Registry, name: string): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  return (metric?.values[0]?.value as number | undefined) ?? 0;
}

t.test('a trim gives freed native memory back to the system, and counts it', { skip: GLIBC }, async (t) => {
  const registry = new Registry();
  const trimmer = new MallocTrimmer(registry, createLogger('test', 'silent'), Number.MAX_SAFE_INTEGER);
  t.teardown(() => trimmer.stop());
  const kept = await fragmentedNativeMemory();
  const result = trimmer.trim();
  t.ok(result, 'glibc has malloc_trim');
  const released = result!.rssBefore - result!.rssAfter;
  t.ok(released >= 24 * MIB, `RSS fell by ${(released / MIB).toFixed(1)} MiB of the 42 MiB freed`);
  t.equal(await counter(registry, 'updater_malloc_trims_total'), 1);
  t.equal(await counter(registry, 'updater_malloc_trim_released_bytes_total'), released);
  t.equal(kept.length, 64, 'the kept buffers lived through it');
});

t.test('RSS grown past the threshold is trimmed without being asked, and only then', { skip: GLIBC }, async (t) => {
  const registry = new Registry();
  const trimmer = new MallocTrimmer(registry, createLogger('test', 'silent'), 4 * MIB, 0);
  t.teardown(() => trimmer.stop());
  await sleep(2_500);
  t.equal(await counter(registry, 'updater_malloc_trims_total'), 0, 'no growth since it started: no trim');
  const kept = await fragmentedNativeMemory();
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && (await counter(registry, 'updater_malloc_trims_total')) === 0) await sleep(200);
  t.equal(await counter(registry, 'updater_malloc_trims_total'), 1, 'growth: a trim ran');
  const released = await counter(registry, 'updater_malloc_trim_released_bytes_total');
  t.ok(released >= 24 * MIB, `and gave back ${(released / MIB).toFixed(1)} MiB`);
  await sleep(2_500);
  t.equal(await counter(registry, 'updater_malloc_trims_total'), 1, 'and none after it while RSS stays put');
  t.equal(kept.length, 64);
});
