import { makeFixture, firmware } from '../test/helpers/fixture.js';
import { startTestServer } from '../test/helpers/server.js';
import { median } from './report.js';
import { positiveInt, roundOrder, roundRatioRow } from './rounds.js';

// How long a server takes to start, and on how much CPU, with its actors bundled (the default,
// docs/architecture.md "Actor bundles") against the same build with UPDATER_UNBUNDLED=1, in
// this process as a test server starts: every actor's worker, SQLite, one track. The two
// alternate within each round (roundOrder), and each ratio is taken per round.
//   BENCH_START_ROUNDS (default 8)

const ROUNDS = positiveInt(process.env.BENCH_START_ROUNDS, 8);
const SIDES = ['bundled', 'unbundled'] as const;
type Side = (typeof SIDES)[number];

interface Start {
  readonly wallMs: number;
  /** This process's CPU (every thread) from the call until the server listens. */
  readonly cpuMs: number;
}

export async function runStartBench(): Promise<Record<string, unknown>> {
  const fixture = await makeFixture('updater-bench-start-');
  try {
    const app = await fixture.writeBinary('app.bin', firmware(100_000, 'start'));
    const startOnce = async (side: Side): Promise<Start> => {
      if (side === 'unbundled') process.env.UPDATER_UNBUNDLED = '1';
      else delete process.env.UPDATER_UNBUNDLED;
      const cpu = process.cpuUsage();
      const started = performance.now();
      const server = await startTestServer(fixture, [{ name: 'app', version: '1', binary: app.path }]);
      const wallMs = performance.now() - started;
      const used = process.cpuUsage(cpu);
      await server.stop();
      return { wallMs, cpuMs: (used.user + used.system) / 1000 };
    };
    await startOnce('bundled'); // warm the page cache and this process's own modules
    await startOnce('unbundled');
    const runs: Record<Side, Start[]> = { bundled: [], unbundled: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of roundOrder(SIDES, round)) runs[side].push(await startOnce(side));
    }
    const of = (side: Side, key: keyof Start) => runs[side].map((r) => r[key]);
    console.log(`  ${ROUNDS} rounds; medians: bundled ${median(of('bundled', 'wallMs')).toFixed(0)} ms on ${median(of('bundled', 'cpuMs')).toFixed(0)} ms of CPU, unbundled ${median(of('unbundled', 'wallMs')).toFixed(0)} ms on ${median(of('unbundled', 'cpuMs')).toFixed(0)} ms`);
    return {
      rounds: ROUNDS,
      bundled_start_ms: median(of('bundled', 'wallMs')),
      bundled_start_cpu_ms: median(of('bundled', 'cpuMs')),
      unbundled_start_ms: median(of('unbundled', 'wallMs')),
      unbundled_start_cpu_ms: median(of('unbundled', 'cpuMs')),
      ratios: [
        roundRatioRow('server start CPU, bundled / unbundled actors', of('bundled', 'cpuMs'), of('unbundled', 'cpuMs')),
        roundRatioRow('server start time, bundled / unbundled actors', of('bundled', 'wallMs'), of('unbundled', 'wallMs')),
      ],
    };
  } finally {
    delete process.env.UPDATER_UNBUNDLED;
    await fixture.cleanup();
  }
}
