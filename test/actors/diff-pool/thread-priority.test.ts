import { getPriority } from 'node:os';
import { Worker } from 'node:worker_threads';
import t from 'tap';
import { BACKGROUND_NICE } from '../../../src/actors/diff-pool/thread-priority.js';

// The diff pool's threads lower their own priority, and only their own: the event loops that
// answer devices keep theirs. Run in a worker so this test's thread stays as it was.

t.test('a worker lowers its own priority, not the process', { skip: process.platform === 'linux' ? false : 'per-thread priority is Linux only' }, async (t) => {
  const before = getPriority(process.pid);
  const url = new URL('../../../src/actors/diff-pool/thread-priority.js', import.meta.url).href;
  const worker = new Worker(`import('${url}').then((m) => require('node:worker_threads').parentPort.postMessage(m.lowerThisThreadsPriority()))`, { eval: true });
  const nice = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  t.equal(nice, Math.max(before, BACKGROUND_NICE), 'the worker now runs at the background nice value');
  t.equal(getPriority(process.pid), before, 'the main thread keeps its priority');
});

t.test('the diff pool task file lowers the thread that loads it', { skip: process.platform === 'linux' ? false : 'Linux only' }, async (t) => {
  const url = new URL('../../../src/actors/diff-pool/task.js', import.meta.url).href;
  const worker = new Worker(`const { readlinkSync } = require('node:fs'); const { getPriority } = require('node:os');
    import('${url}').then(() => require('node:worker_threads').parentPort.postMessage(getPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()))))`, { eval: true });
  const nice = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  t.equal(nice, Math.max(getPriority(process.pid), BACKGROUND_NICE));
});
