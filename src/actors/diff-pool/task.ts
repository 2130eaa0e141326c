import { lowerThisThreadsPriority } from '../../shared/thread-priority.js';

// The diff pool's Piscina task file: each pool thread loads it and runs its default export
// once per task. The job itself lives in src/shared/diff/pipeline.ts, where the benchmarks
// can measure it without loading an actor's file. A pool thread runs at a lower priority than
// the event loops (src/shared/thread-priority.ts), and so does the engine process it starts.
lowerThisThreadsPriority();

export { default } from '../../shared/diff/pipeline.js';
