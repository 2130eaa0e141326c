import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { aptLine, hasTool, type ToolName } from './system-tool-list.js';
import { currentRunDir, SKIPS_DIR, strictTools } from './test-run.js';

export { SYSTEM_TOOLS, toolPath, type ToolName } from './system-tool-list.js';

// The system tools some tests call, which npm cannot bring (the list, with each one's Debian
// package: system-tool-list.ts). A test names what it needs in its options
// (`t.test(name, needs('zstd', 'bspatch'), fn)`): on a machine without them it is skipped with
// the package to install; under CI=true a missing tool is a failure instead, so CI keeps
// proving everything. Each skip is recorded in the tap run's directory, and run-after.ts ends
// the run with one line naming every package missing.

const known = new Map<ToolName, boolean>();

/** The tools of `names` missing on this machine (each looked up once per process). */
export function missingTools(names: readonly ToolName[]): ToolName[] {
  return names.filter((name) => {
    if (!known.has(name)) known.set(name, hasTool(name));
    return !known.get(name);
  });
}

/**
 * Options for a test that needs system tools: `{ skip: false }` when they are all here;
 * otherwise `{ skip: reason }`, recorded for the run's closing line, and under CI=true a
 * failing assertion in the file as well, naming what is missing.
 */
export function needs(...names: ToolName[]): { skip: false | string } {
  const missing = missingTools(names);
  if (missing.length === 0) return { skip: false };
  const reason = `needs ${missing.join(', ')} (${aptLine(missing)})`;
  if (strictTools()) {
    t.fail(`CI=true and a system tool is missing: ${reason}`);
  } else {
    recordSkip(missing);
  }
  return { skip: reason };
}

function recordSkip(missing: readonly ToolName[]): void {
  const dir = currentRunDir();
  if (dir === undefined) return;
  const skips = join(dir, SKIPS_DIR);
  mkdirSync(skips, { recursive: true });
  // One file per test process, one line per skipped test: nothing to lock across processes.
  appendFileSync(join(skips, `${process.pid}.txt`), `${missing.join(' ')}\n`);
}
