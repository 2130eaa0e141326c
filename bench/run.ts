import { availableParallelism, loadavg } from 'node:os';
import { againstArgs, buildsFor, withoutAgainst, type Build } from './builds.js';
import { printRecord, ratioRows, summaryTable, verdict, type RatioRow } from './report.js';

// `npm run bench [-- suite …]`: runs the suites in order (all of them by default), prints each
// one's figures as it finishes, then one table of ratios against their goals.

type Suite = () => Promise<Record<string, unknown>>;

interface SuiteEntry {
  readonly name: string;
  load(): Promise<Suite>;
}

const SUITES: readonly SuiteEntry[] = [
  { name: 'heartbeat', load: async () => (await import('./heartbeat.js')).runHeartbeatBench },
  { name: 'delta', load: async () => (await import('./delta.js')).runDeltaBench },
  { name: 'coap', load: async () => (await import('./coap.js')).runCoapBench },
  { name: 'download', load: async () => (await import('./download.js')).runDownloadBench },
  { name: 'agent', load: async () => (await import('./agent.js')).runAgentBench },
  { name: 'soak', load: async () => (await import('./soak.js')).runSoakBench },
  { name: 'fleet', load: async () => (await import('./fleet.js')).runFleetBench },
  { name: 'cluster', load: async () => (await import('./cluster.js')).runClusterBench },
  { name: 'start', load: async () => (await import('./start.js')).runStartBench },
];

// With `--against [name=]path` (repeatable), these suites measure this build and the others in
// the same run (heartbeat-against.ts, coap-against.ts); the other suites have no such mode.
const AGAINST: Record<string, (builds: readonly Build[]) => Promise<Suite>> = {
  heartbeat: async (builds) => {
    const { runHeartbeatAgainst } = await import('./heartbeat-against.js');
    return () => runHeartbeatAgainst(builds);
  },
  coap: async (builds) => {
    const { runCoapAgainst } = await import('./coap-against.js');
    return () => runCoapAgainst(builds);
  },
};

function loadAverage(): string {
  return `${loadavg().map((n) => n.toFixed(2)).join(' ')} on ${availableParallelism()} cores`;
}

function selectSuites(args: readonly string[]): SuiteEntry[] {
  if (args.length === 0) return [...SUITES];
  const unknown = args.filter((a) => !SUITES.some((s) => s.name === a));
  if (unknown.length > 0) {
    throw new RangeError(`unknown suite ${unknown.join(', ')}; choose from ${SUITES.map((s) => s.name).join(', ')}`);
  }
  return SUITES.filter((s) => args.includes(s.name));
}

async function main(): Promise<number> {
  const args = withoutAgainst(process.argv.slice(2)).filter((a) => a !== '--quick');
  if (process.argv.includes('--help') || args.includes('-h')) {
    console.log(`usage: npm run bench [-- ${SUITES.map((s) => s.name).join(' | ')} …] [--against [name=]/other/checkout …]\nSee bench/README.md for what each number means.`);
    return 0;
  }
  const against = againstArgs(process.argv.slice(2));
  let suites = selectSuites(args);
  if (against.length > 0) {
    const builds = buildsFor(against);
    const without = suites.filter((s) => !AGAINST[s.name]);
    if (args.length > 0 && without.length > 0) throw new RangeError(`--against is for ${Object.keys(AGAINST).join(' and ')}, not ${without.map((s) => s.name).join(', ')}`);
    suites = suites.filter((s) => AGAINST[s.name]).map((s) => ({ name: s.name, load: () => AGAINST[s.name]!(builds) }));
  }
  const rows: RatioRow[] = [];
  const failed: string[] = [];
  for (const suite of suites) {
    let run: Suite;
    try {
      run = await suite.load();
    } catch (err) {
      failed.push(suite.name);
      console.error(`\n[${suite.name}] cannot be loaded:`, err);
      continue;
    }
    // Other work on the machine moves every figure; the load average says how much there was.
    console.log(`\n[${suite.name}] running (load average ${loadAverage()})`);
    const started = performance.now();
    try {
      const record = await run();
      printRecord(suite.name, record);
      rows.push(...ratioRows(suite.name, record));
    } catch (err) {
      // One broken suite must not hide the others' figures.
      failed.push(suite.name);
      console.error(`[${suite.name}] failed:`, err);
    }
    console.log(`[${suite.name}] took ${((performance.now() - started) / 1000).toFixed(1)} s (load average now ${loadAverage()})`);
  }
  console.log('\nSummary (each ratio taken per round, then the median and the spread of those; a shared, noisy machine moves them)\n');
  console.log(rows.length > 0 ? summaryTable(rows) : '(no ratios)');
  const missed = rows.filter((r) => verdict(r) === 'MISS').map((r) => r.name);
  if (missed.length > 0) console.log(`\nMissed goals: ${missed.join('; ')}`);
  if (failed.length > 0) console.log(`\nFailed suites: ${failed.join(', ')}`);
  // A missed goal is a finding, not a crash: only a suite that could not run fails the command.
  return failed.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(2);
  },
);
