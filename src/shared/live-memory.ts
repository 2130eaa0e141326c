import { fullCollection } from './garbage-collector.js';

// A thread's live memory: its heap figures right after a full collection. Between full
// collections a heap's `used` figure holds garbage as well, and in a thread that allocates
// little V8 may go ten minutes without one: a soak measured the manifester's heap floor rising
// 0.6 MB/min while two heap snapshots a few minutes apart (which collect first) differed by
// 0.1 MB. Only figures taken after a collection tell a leak from garbage (docs/memory.md).

/** A thread's heap figures, as every actor's `memory()` answers them (src/messages/lifecycle.ts). */
export interface ThreadMemory {
  readonly heap_used: number;
  readonly heap_total: number;
  readonly external: number;
  readonly array_buffers: number;
}

export function liveMemory(): ThreadMemory {
  fullCollection()();
  const m = process.memoryUsage();
  return { heap_used: m.heapUsed, heap_total: m.heapTotal, external: m.external, array_buffers: m.arrayBuffers };
}
