import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quickFiles } from './quick.js';
import { fileTimes, slowestLines } from './slowest.js';
import { buildTapPlugins, tapEnv } from './tap-env.js';

// `npm test`: tap over every test file, then the closing line of run-hooks.ts (the tests skipped
// for want of a system tool) as the very last line: tap runs its after script before it prints
// its own summary, so the after script leaves the line in a file for this wrapper to print.
// Before it come the run's wall time and its ten slowest files (slowest.ts).
// Arguments go to tap (`npm test -- dist/test/x.test.js`), but --quick: the files of
// `npm run test:quick` (quick.ts).

const dir = mkdtempSync(join(tmpdir(), 'updater-test-report-'));
const report = join(dir, 'skipped.txt');
const started = Date.now();
const args = process.argv.slice(2);
// tap runs from the package's root (npm's scripts do too) and keeps its copies there.
const tapArgs = args.includes('--quick') ? [...args.filter((a) => a !== '--quick'), ...quickFiles(process.cwd())] : args;
// npm puts node_modules/.bin on the PATH of its scripts.
await buildTapPlugins();
const tap = spawn('tap', tapArgs, { stdio: 'inherit', env: { ...tapEnv(), UPDATER_TEST_SKIP_REPORT: report } });
// Ctrl-C reaches tap too (one process group): wait for it to stop its tests and servers.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => tap.kill('SIGTERM'));
tap.once('exit', (code) => {
  const lines = slowestLines(fileTimes(join('.tap', 'test-results'), started));
  process.stdout.write(`${[...lines, `# tap's wall time: ${((Date.now() - started) / 1000).toFixed(0)} s`].join('\n')}\n`);
  try {
    process.stdout.write(readFileSync(report, 'utf8'));
  } catch {
    // Nothing was skipped.
  }
  rmSync(dir, { recursive: true, force: true });
  process.exitCode = code ?? 1;
});
