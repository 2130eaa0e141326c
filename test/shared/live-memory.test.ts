import { Worker } from 'node:worker_threads';
import t from 'tap';

// Live memory leaves garbage out: a thread holds 64 arrays of 1 MiB (large objects, which live in
// the old generation from the start), drops them, and its heap's `used` figure still counts them (no full
// collection has run); liveMemory's figure does not. Run in a worker of its own, as an actor is.

t.test('live memory is read after a full collection', async (t) => {
  const moduleUrl = new URL('../../src/shared/live-memory.js', import.meta.url).href;
  const worker = new Worker(`
    const { parentPort } = require('node:worker_threads');
    import('${moduleUrl}').then(({ liveMemory }) => {
      const before = liveMemory().heap_used;
      let held = [];
      for (let i = 0; i < 64; i++) held.push(Array.from({ length: 128 * 1024 }, (_, j) => j + 0.5));
      held = undefined;
      const dead = process.memoryUsage().heapUsed;
      parentPort.postMessage({ before, dead, live: liveMemory().heap_used });
    });
  `, { eval: true });
  const outcome = await new Promise<{ before: number; dead: number; live: number }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  const MB = 1024 * 1024;
  t.ok(outcome.dead - outcome.before > 48 * MB, `the dropped objects still count in heapUsed: ${(outcome.before / MB).toFixed(1)} → ${(outcome.dead / MB).toFixed(1)} MB`);
  t.ok(outcome.live - outcome.before < 8 * MB, `live memory leaves them out: ${(outcome.live / MB).toFixed(1)} MB`);
});
