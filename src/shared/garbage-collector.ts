import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Counter, type Registry } from 'prom-client';

// Keeps garbage from piling up in a thread that allocates too little for V8 to collect it.
//
// V8 runs a full collection when a heap's old generation has grown by a factor since the last
// one. A thread that allocates little can go a whole ten-minute soak without one, and two
// kinds of garbage then pile up (docs/memory.md, "Dead buffers" and "Live memory"):
//
//   buffers         the memory behind a dead Buffer, ArrayBuffer or SharedArrayBuffer, freed
//                   only when a full collection finds the object dead; in Node 20's V8 those
//                   bytes do not count toward the growth that schedules one. The store-keeper
//                   (hashing through a 1 MiB buffer, loading cache entries into shared memory)
//                   held 16 MB more of them a minute.
//   old_generation  objects promoted and then dropped. The manifester's old generation grew
//                   0.6 MB/min while what it kept alive grew 0.1 MB in four minutes, and the
//                   heap's pages, hence RSS, grew with it.
//
// So each thread checks both once a second and runs a full collection when its array buffers
// have grown by DEAD_BUFFER_BYTES, or its old generation by OLD_GARBAGE_BYTES, since the lowest
// figure seen after the last one; at most every 5 s for buffers (their memory is outside every
// heap budget) and every minute for the old generation (a bounded few MiB). A collection of one
// of our heaps (10-20 MB) takes a few milliseconds; a busy thread collects often on its own and
// seldom reaches either threshold.

/** Dead array-buffer bytes a thread may gather before it collects them (docs/memory.md counts them). */
export const DEAD_BUFFER_BYTES = 16 * 1024 * 1024;
/** Old-generation growth since the last full collection at which a thread runs one (docs/memory.md). */
export const OLD_GARBAGE_BYTES = 4 * 1024 * 1024;
const CHECK_INTERVAL_MS = 1_000;
/** The least time between two collections a thread runs for each reason. */
export const MIN_INTERVAL_MS: Readonly<Record<Reason, number>> = { buffers: 5_000, old_generation: 60_000 };
type Reason = 'buffers' | 'old_generation';
const REASONS: readonly Reason[] = ['buffers', 'old_generation'];
const THRESHOLD_BYTES: Readonly<Record<Reason, number>> = { buffers: DEAD_BUFFER_BYTES, old_generation: OLD_GARBAGE_BYTES };

/** The young generation's spaces: their garbage goes in every scavenge, and they fill and empty many times a second. */
const YOUNG_SPACES = new Set(['new_space', 'new_large_object_space']);

let collect: (() => void) | undefined;

/** V8's full collection, exposed for this thread (flags are process-wide; the function is per isolate). */
export function fullCollection(): () => void {
  if (!collect) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  return collect;
}

/** Bytes in this thread's old generation (every space but the young ones), live or dead. */
export function oldGenerationBytes(): number {
  let bytes = 0;
  for (const space of getHeapSpaceStatistics()) if (!YOUNG_SPACES.has(space.space_name)) bytes += space.space_used_size;
  return bytes;
}

/** `minIntervalMs`: as MIN_INTERVAL_MS (a test shortens them). */
export function startGarbageCollector(registry: Registry, actor: string, minIntervalMs = MIN_INTERVAL_MS): void {
  const collections = new Counter({
    name: 'updater_forced_collections_total',
    help: 'Full collections a thread ran itself because dead array buffers grew by 16 MiB (reason="buffers") or its old generation by 4 MiB (reason="old_generation") since the last one',
    labelNames: ['actor', 'reason'],
    registers: [registry],
  });
  for (const reason of REASONS) collections.inc({ actor, reason }, 0);
  const readings = (): Record<Reason, number> => ({ buffers: process.memoryUsage().arrayBuffers, old_generation: oldGenerationBytes() });
  // A collection frees memory some milliseconds later (V8 sweeps in the background), and V8's
  // own full collections lower the figures too: each baseline follows the lowest figure seen.
  let baseline = readings();
  const lastAt: Record<Reason, number> = { buffers: 0, old_generation: 0 };
  const timer = setInterval(() => {
    const now = performance.now();
    const held = readings();
    for (const reason of REASONS) baseline[reason] = Math.min(baseline[reason], held[reason]);
    const due = REASONS.find((r) => held[r] - baseline[r] >= THRESHOLD_BYTES[r] && now - lastAt[r] >= minIntervalMs[r]);
    if (!due) return;
    fullCollection()();
    lastAt[due] = now;
    baseline = readings();
    collections.inc({ actor, reason: due });
  }, CHECK_INTERVAL_MS);
  timer.unref();
}
