import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildTapPlugins, tapEnv } from './tap-env.js';

// `npm run test:stress -- [--busy N] [--repeat K] [tap options] [files…]`: the tests under
// load, to find the ones that pass only on an idle machine. Starts N processes that spin on
// a core each (default 2: this project's machines have two cores), runs tap on the files (all
// of them when none is named) K times in a row (default 3), prints one line per round with
// its time and tap's counts (and the failures, if any), and stops the spinning processes by
// PID at the end, on a failure, or on Ctrl-C. Each spinner also ends by itself within a
// fifth of a second of this process going away, even by kill -9, so none is ever left
// eating a core. Each round's full output stays in a log file whose path the line names.
// Files may be named as sources (test/x/y.test.ts) or as built files (dist/test/x/y.test.js).

interface Options {
  busy: number;
  repeat: number;
  tapArgs: string[];
}

const USAGE = 'usage: npm run test:stress -- [--busy N] [--repeat K] [tap options] [test files…]';

function parseArgs(argv: string[]): Options {
  const options: Options = { busy: 2, repeat: 3, tapArgs: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.split('=', 2) as [string, string | undefined];
    if (flag === '--busy' || flag === '--repeat') {
      const value = Number(inline ?? argv[++i]);
      if (!Number.isInteger(value) || value < (flag === '--busy' ? 0 : 1)) throw new Error(`${flag} wants a whole number${flag === '--busy' ? '' : ' of at least 1'}\n${USAGE}`);
      options[flag === '--busy' ? 'busy' : 'repeat'] = value;
    } else if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else {
      options.tapArgs.push(/^test\/.*\.test\.ts$/.test(arg) ? `dist/${arg.replace(/\.ts$/, '.js')}` : arg);
    }
  }
  return options;
}

// Spins in slices of 200 ms and checks between them that the runner (argv[1]) still exists:
// a plain for(;;){} would outlive a runner killed by -9.
const SPIN = `const runner = Number(process.argv[1]);
for (;;) {
  const until = Date.now() + 200;
  while (Date.now() < until);
  try { process.kill(runner, 0); } catch { process.exit(0); }
}`;

const busy: ChildProcess[] = [];
let tap: ChildProcess | undefined;

function stopBusy(): void {
  for (const child of busy.splice(0)) {
    if (child.pid !== undefined && child.exitCode === null) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}

function summary(log: string): { counts: string; failures: string[] } {
  const text = readFileSync(log, 'utf8');
  const counts = [...text.matchAll(/^# (\{ total: .* \})$/gm)].at(-1)?.[1] ?? 'no summary from tap';
  // Top-level lines name the failing files; indented ones the failing subtests and assertions.
  const failures = text.split('\n').filter((l) => /^\s*not ok \d+ - /.test(l)).map((l) => l.trimEnd());
  return { counts, failures };
}

function runRound(tapArgs: string[], log: string): Promise<number | null> {
  return new Promise((resolve) => {
    const out = createWriteStream(log);
    // npm puts node_modules/.bin on the PATH of its scripts.
    tap = spawn('tap', tapArgs, { stdio: ['ignore', 'pipe', 'pipe'], env: tapEnv() });
    tap.stdout!.pipe(out, { end: false });
    tap.stderr!.pipe(out, { end: false });
    tap.once('error', (err) => {
      out.end(`${err.message}\n`);
      resolve(null);
    });
    tap.once('close', (code) => {
      tap = undefined;
      out.end(() => resolve(code));
    });
  });
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  await buildTapPlugins();
  // Ctrl-C reaches tap and the spinners too (one process group): let tap stop its tests and
  // servers, then make sure of the spinners. A SIGTERM to this process alone is passed on.
  const interrupted = (signal: NodeJS.Signals) => () => {
    stopBusy();
    if (tap) tap.kill(signal);
    else process.exit(130);
    process.exitCode = 130;
  };
  process.on('SIGINT', interrupted('SIGINT'));
  process.on('SIGTERM', interrupted('SIGTERM'));
  process.on('exit', stopBusy);

  for (let i = 0; i < options.busy; i++) {
    busy.push(spawn(process.execPath, ['-e', SPIN, String(process.pid)], { stdio: 'ignore' }));
  }
  const logs = mkdtempSync(join(tmpdir(), 'updater-stress-'));
  const what = options.tapArgs.filter((a) => !a.startsWith('-')).length > 0 ? options.tapArgs.join(' ') : 'every test file';
  process.stdout.write(`stress: ${options.repeat} round(s) of ${what} beside ${options.busy} busy process(es) (PIDs ${busy.map((b) => b.pid).join(', ') || 'none'}); logs in ${logs}\n`);

  let passed = 0;
  for (let round = 1; round <= options.repeat && process.exitCode !== 130; round++) {
    const log = join(logs, `round-${round}.log`);
    const started = Date.now();
    const code = await runRound(options.tapArgs, log);
    const seconds = Math.round((Date.now() - started) / 1000);
    const { counts, failures } = summary(log);
    if (code === 0) passed++;
    process.stdout.write(`round ${round}/${options.repeat}: ${code === 0 ? 'pass' : `FAIL (exit ${code})`} in ${seconds} s, ${counts}, log ${log}\n`);
    for (const line of failures.slice(0, 30)) process.stdout.write(`  ${line}\n`);
    if (failures.length > 30) process.stdout.write(`  … ${failures.length - 30} more in the log\n`);
  }
  stopBusy();
  process.stdout.write(`stress: ${passed} of ${options.repeat} round(s) passed beside ${options.busy} busy process(es)\n`);
  if (process.exitCode !== 130) process.exitCode = passed === options.repeat ? 0 : 1;
}

main().catch((err: Error) => {
  stopBusy();
  process.stderr.write(`${err.message}\n`);
  process.exitCode = 2;
});
