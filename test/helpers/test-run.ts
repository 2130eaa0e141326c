import { tmpdir } from 'node:os';
import { join } from 'node:path';

// What one `tap` run shares between its processes. tap runs every test file as its own process,
// and the before/after scripts (test/helpers/run-before.ts, run-after.ts) as two more, all
// children of the same runner process: the runner's PID names a directory in the temp dir that
// holds the run's PostgreSQL address (postgres.json) and the skips the test files recorded
// (skips/). A test file run without tap (`node dist/test/x.test.js`) has no such directory.

export const RUN_DIR_PREFIX = 'updater-tap-';

/** The run directory of the tap runner with this PID. */
export function runDirOf(runnerPid: number): string {
  return join(tmpdir(), `${RUN_DIR_PREFIX}${runnerPid}`);
}

// A test file's process learns its run directory from its parent, the runner (tap sets
// TAP_CHILD_ID in the processes it starts), and hands it on in UPDATER_TEST_RUN_DIR to the
// processes it starts itself, whose parent is not the runner.
if (!process.env.UPDATER_TEST_RUN_DIR && process.env.TAP_CHILD_ID !== undefined) {
  process.env.UPDATER_TEST_RUN_DIR = runDirOf(process.ppid);
}

/** This test process's run directory, when tap started it. */
export function currentRunDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.UPDATER_TEST_RUN_DIR || undefined;
}

/** The run's embedded PostgreSQL, as run-before.ts writes it. */
export interface RunPostgres {
  /** Connects as the `updater` role to the `postgres` database. */
  readonly url: string;
  /** The process that owns the server and stops it when the run ends. */
  readonly keeperPid: number;
}

export const POSTGRES_FILE = 'postgres.json';
export const SKIPS_DIR = 'skips';

/** CI=true: a missing system tool fails the run instead of skipping its tests. */
export function strictTools(env: NodeJS.ProcessEnv = process.env): boolean {
  const ci = (env.CI ?? '').toLowerCase();
  return ci !== '' && ci !== 'false' && ci !== '0';
}

/** Whether a process of that PID runs (EPERM: it does, as another user). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
