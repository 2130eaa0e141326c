import { join } from 'node:path';
import { Piscina } from 'piscina';
import type { DiffOutcome, DiffTask } from '../../messages/diff.js';
import { packageRoot } from '../../shared/package-root.js';

// The diff pool as its one caller, the store-keeper, sees it: Piscina threads in the
// store-keeper's worker, each loading task.ts. This is the pool's only module another actor
// folder imports (docs/architecture.md, "Import rule"): the diff pool is the store-keeper's
// worker pool, not an actor the supervisor runs.

export { expectedGenerationBytes } from './memory.js';

/** Idle diff threads exit after this, so memory returns to the baseline between bursts. */
const POOL_IDLE_TIMEOUT_MS = 5_000;

export type RunDiffTask = (task: DiffTask) => Promise<DiffOutcome>;

export interface DiffPool {
  readonly run: RunDiffTask;
  /** Tasks waiting for a thread. */
  readonly queueSize: number;
  /** Threads alive now (they exit when idle). */
  readonly threads: number;
  destroy(): Promise<void>;
}

/** task.js beside this module in dist/src (task.ts in src/ when run from the sources), bundled into the store-keeper or not. */
function taskFile(): string {
  const fromSources = import.meta.url.endsWith('.ts');
  return join(packageRoot(import.meta.url), ...(fromSources ? ['src'] : ['dist', 'src']), 'actors', 'diff-pool', `task${fromSources ? '.ts' : '.js'}`);
}

/** Starts the pool: at most `concurrency` (store.delta_concurrency) generations at once. */
export function startDiffPool(concurrency: number): DiffPool {
  const piscina = new Piscina({
    filename: taskFile(),
    minThreads: 0,
    maxThreads: concurrency,
    idleTimeout: POOL_IDLE_TIMEOUT_MS,
    // Queue without bound: callers are single-flighted per pair, so the queue holds at most
    // one task per distinct pair asked for, and each waits its turn for a thread.
    maxQueue: Infinity,
  });
  return {
    run: (task) => piscina.run(task) as Promise<DiffOutcome>,
    get queueSize() {
      return piscina.queueSize;
    },
    get threads() {
      return piscina.threads.length;
    },
    destroy: () => piscina.destroy(),
  };
}
