import { Worker } from 'node:worker_threads';
import t from 'tap';

// A quiet thread that drops large buffers, or objects that had lived long enough to be
// promoted, gets them freed: the collector sees the thread's array-buffer bytes or its old
// generation grow past a threshold and runs a full collection, and counts it. Run in a worker
// of its own, fenced as an actor is, so nothing else in this process allocates or collects.

interface Outcome {
  readonly peak: number;
  readonly after: number;
  readonly collections: number;
}

t.test('dead buffers beyond the threshold are collected and counted', async (t) => {
  const collectorUrl = new URL('../../src/shared/garbage-collector.js', import.meta.url).href;
  const worker = new Worker(`
    const { parentPort } = require('node:worker_threads');
    const { Registry } = require('prom-client');
    import('${collectorUrl}').then(async ({ startGarbageCollector }) => {
      const registry = new Registry();
      startGarbageCollector(registry, 'test');
      // 48 MiB of buffers that live long enough to be promoted to the old generation (young
      // garbage drives scavenges meanwhile), then die: only a full collection frees them, and
      // this thread's heap does not grow enough to schedule one (as the store-keeper's did not).
      const held = [];
      for (let i = 0; i < 48; i++) held.push(Buffer.allocUnsafeSlow(1024 * 1024).fill(i));
      let sink;
      for (let j = 0; j < 3e6; j++) sink = { j };
      held.length = 0;
      const peak = process.memoryUsage().arrayBuffers;
      const deadline = Date.now() + 60_000;
      let after = peak;
      while (Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        for (let j = 0; j < 3e5; j++) sink = { j };
        after = process.memoryUsage().arrayBuffers;
        if (after < 8 * 1024 * 1024) break;
      }
      const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === 'updater_forced_collections_total');
      parentPort.postMessage({ peak, after, collections: metric.values.find((v) => v.labels.reason === 'buffers').value });
    });`, { eval: true });
  const outcome = await new Promise<Outcome>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  t.ok(outcome.peak >= 40 * 1024 * 1024, `the dead buffers were held (${outcome.peak} bytes)`);
  t.ok(outcome.after < 8 * 1024 * 1024, `and freed afterwards (${outcome.after} bytes left)`);
  t.ok(outcome.collections >= 1, `by a counted collection (${outcome.collections})`);
});

t.test('promoted garbage beyond the threshold is collected and counted', async (t) => {
  const collectorUrl = new URL('../../src/shared/garbage-collector.js', import.meta.url).href;
  const worker = new Worker(`
    const { parentPort } = require('node:worker_threads');
    const { Registry } = require('prom-client');
    import('${collectorUrl}').then(async ({ startGarbageCollector, oldGenerationBytes }) => {
      const registry = new Registry();
      startGarbageCollector(registry, 'test', { buffers: 5000, old_generation: 500 });
      const start = oldGenerationBytes();
      let sink;
      let peak = start;
      // Six rounds of 8 MiB of small objects that live through scavenges (young garbage drives
      // them meanwhile), are promoted, then die: 48 MiB of old-generation garbage in all.
      for (let round = 0; round < 6; round++) {
        let held = [];
        for (let i = 0; i < 8 * 1024; i++) held.push(new Array(128).fill(round + 0.5));
        for (let j = 0; j < 2e6; j++) sink = { j };
        held = undefined;
        peak = Math.max(peak, oldGenerationBytes());
        await new Promise((r) => setTimeout(r, 1500));
      }
      const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === 'updater_forced_collections_total');
      parentPort.postMessage({ start, peak, end: oldGenerationBytes(), collections: metric.values.find((v) => v.labels.reason === 'old_generation').value });
    });`, { eval: true, resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 512 } });
  const outcome = await new Promise<{ start: number; peak: number; end: number; collections: number }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  const MB = 1024 * 1024;
  t.comment(`old generation ${(outcome.start / MB).toFixed(1)} MB at start, ${(outcome.peak / MB).toFixed(1)} at peak, ${(outcome.end / MB).toFixed(1)} at the end`);
  t.ok(outcome.collections >= 1, `collections were run (${outcome.collections})`);
  // Without the collector V8 collected some rounds itself, but the last round's garbage stayed
  // (measured: 6.2 MB at start, 13.1 at the end).
  t.ok(outcome.end - outcome.start < 4 * MB, 'the old generation ends within 4 MB of its start, though 48 MiB of garbage went through it');
});
