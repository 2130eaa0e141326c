import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

// The closing list of `npm test` (run-tests.ts): the slowest test files of the run. tap copies
// each file's own TAP to .tap/test-results/<file>.tap (always, whatever the reporter), and the
// file's TAP ends on its top-level `# time=…ms`: the time of the file's own process from tap's
// start in it, so node's start and the imports before tap's are left out; it still ranks the
// files a contributor should speed up. Files written before the run started are an earlier
// run's and are left out.

export interface FileTime {
  readonly file: string;
  readonly seconds: number;
}

/** The time a test file's own TAP closes on; undefined when it never got there (killed, crashed). */
export function timeOf(tap: string): number | undefined {
  // Top level only: a subtest's time line is indented.
  const all = [...tap.matchAll(/^# time=([\d.]+)ms$/gm)];
  const last = all.at(-1);
  return last ? Number(last[1]) / 1000 : undefined;
}

/** Every test file that tap's results directory holds from a run started at `since` (ms). */
export function fileTimes(resultsDir: string, since: number): FileTime[] {
  const times: FileTime[] = [];
  let names: string[];
  try {
    names = readdirSync(resultsDir, { recursive: true, encoding: 'utf8' });
  } catch {
    return times;
  }
  for (const name of names) {
    const path = join(resultsDir, name);
    if (!name.endsWith('.tap') || statSync(path).mtimeMs < since) continue;
    const seconds = timeOf(readFileSync(path, 'utf8'));
    if (seconds !== undefined) times.push({ file: relative(resultsDir, path).replace(/\.tap$/, ''), seconds });
  }
  return times;
}

/** The `count` slowest files as lines to print, slowest first; none when there are none. */
export function slowestLines(times: readonly FileTime[], count = 10): string[] {
  if (times.length === 0) return [];
  const total = times.reduce((sum, f) => sum + f.seconds, 0);
  const slowest = [...times].sort((a, b) => b.seconds - a.seconds).slice(0, count);
  return [
    `# the ${slowest.length} slowest of ${times.length} test files (each one's own time; ${total.toFixed(0)} s in all):`,
    ...slowest.map((f) => `#   ${f.seconds.toFixed(1).padStart(6)} s  ${f.file}`),
  ];
}
