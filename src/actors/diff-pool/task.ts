// The diff pool's Piscina task file: each pool thread loads it and runs its default export
// once per task. The job itself lives in src/shared/diff/pipeline.ts, where the benchmarks
// can measure it without loading an actor's file.
export { default } from '../../shared/diff/pipeline.js';
