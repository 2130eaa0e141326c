import { lowerThisThreadsPriority } from './thread-priority.js';

// The diff pool's Piscina task file: each pool thread loads it and runs its default export
// once per task. The job itself lives in pipeline.ts, which the benchmarks load
// without this file's side effect. A pool thread runs at a lower priority than
// the event loops (thread-priority.ts), and so does the engine process it starts.
lowerThisThreadsPriority();

export { default } from './pipeline.js';
