import { Worker } from 'node:worker_threads';
import t from 'tap';

// A quiet thread that drops large buffers gets them freed: the collector sees the thread's
// array-buffer bytes grow past its threshold and runs a full collection, and counts it. Run in
// a worker of its own, as an actor is, so nothing else in this process allocates or collects.

interface Outcome {
  readonly peak: number;
  readonly after: number;
  readonly collections: number;
}

t.test('dead buffers beyond the threshold are collected and counted', async (t) => {
  const collectorUrl = new URL('../../src/shared/buffer-collector.js', import.meta.url).href;
  const worker = new Worker(`
    const { parentPort } = require('node:worker_threads');
    const { Registry } = require('prom-client');
    import('${collectorUrl}').then(async ({ startBufferCollector }) => {
      const registry = new Registry();
      startBufferCollector(registry, 'test');
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
      const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === 'updater_buffer_collections_total');
      parentPort.postMessage({ peak, after, collections: metric.values[0].value });
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
