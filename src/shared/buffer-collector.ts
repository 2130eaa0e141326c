import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Counter, type Registry } from 'prom-client';

// Keeps a thread's dead ArrayBuffers from piling up outside its heap.
//
// V8 frees the memory behind a Buffer, ArrayBuffer or SharedArrayBuffer only when a collection
// finds the object dead, and in Node 20's V8 those bytes do not count toward the heap growth
// that schedules a full collection. A thread whose heap barely grows but which allocates large
// buffers (the store-keeper hashing a published file through a 1 MiB buffer, loading a cache
// entry into shared memory, decompressing a file to check it) went minutes between full
// collections while its dead buffers grew by 16 MB a minute in the soak (heaptrack showed
// every byte of the growth as array-buffer backing stores; docs/memory.md). So each thread
// checks how many array-buffer bytes it holds and runs a full collection once they have grown
// by DEAD_BUFFER_BYTES since the last one, at most once per MIN_INTERVAL_MS. A collection of one of
// our heaps (10-20 MB) takes a few milliseconds; a busy front-end collects often on its own and
// seldom reaches the threshold.

/** Dead array-buffer bytes a thread may gather before it collects them (docs/memory.md counts them). */
export const DEAD_BUFFER_BYTES = 16 * 1024 * 1024;
const CHECK_INTERVAL_MS = 1_000;
const MIN_INTERVAL_MS = 5_000;

let collect: (() => void) | undefined;

/** V8's full collection, exposed for this thread (flags are process-wide; the function is per isolate). */
export function fullCollection(): () => void {
  if (!collect) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  return collect;
}

export function startBufferCollector(registry: Registry, actor: string): void {
  const collections = new Counter({
    name: 'updater_buffer_collections_total',
    help: 'Full collections run because dead array buffers outside the heap grew by 16 MiB since the last one, per actor thread',
    labelNames: ['actor'],
    registers: [registry],
  });
  collections.inc({ actor }, 0);
  let baseline = process.memoryUsage().arrayBuffers;
  let lastAt = 0;
  const timer = setInterval(() => {
    const held = process.memoryUsage().arrayBuffers;
    // A collection frees buffers some milliseconds later (V8 sweeps them in the background), so
    // the baseline follows the lowest figure seen since.
    if (held < baseline) baseline = held;
    const now = performance.now();
    if (held - baseline < DEAD_BUFFER_BYTES || now - lastAt < MIN_INTERVAL_MS) return;
    fullCollection()();
    lastAt = now;
    baseline = held;
    collections.inc({ actor });
  }, CHECK_INTERVAL_MS);
  timer.unref();
}
