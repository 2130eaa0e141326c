import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { firmware, freePort, makeFixture, nextVersion } from '../test/helpers/fixture.js';
import { heartbeatUntilSigned } from '../test/helpers/http.js';
import { configDocument, writeConfig } from '../test/helpers/server.js';
import type { BareWorkerData } from './bare-uws.js';
import { startBareWorker, stopBareWorker } from './bare-worker.js';
import { threadCpu, threadCpuSince } from './threads.js';
import { comparisonRows, processCpuSeconds, collectWarnings, reportWarnings, startBuildServer, stopNodeProcess, writePortableKeyFile, type Build } from './builds.js';
import { sleep } from './coap-load.js';
import { writeCyclingScript } from './fleet-load.js';
import { BINARY_BYTES, CONNECTIONS, DEVICES, GOAL_MIN_RATIO, heartbeatBody, rawAnswer, ROUNDS, SECONDS, SETTLE_MS, THREADS, WARMUP_SECONDS } from './heartbeat.js';
import { cpuPlan, pinThisProcess } from './pinning.js';
import { formatNumber, median, type RatioRow, type SuiteRecord } from './report.js';
import { roundOrder, roundRatioRow } from './rounds.js';
import { runWrk, type WrkResult } from './wrk.js';

// `npm run bench -- heartbeat --against [name=]/other/checkout`: the heartbeat suite with
// several server builds in one run. Each build is an `updater serve` process of its own
// checkout on the server cores, all with the same tracks; the bare uWS handler (bench/bare-uws.ts,
// a worker of this process, also on the server cores) answers the bytes this build answered.
// Every round measures bare and every build for both heartbeat kinds, the order reversed
// every other round; each ratio is taken per round (rounds.ts). Every request is a heartbeat
// from the next of BENCH_HEARTBEAT_DEVICES device ids, as in the heartbeat suite.

interface Side {
  readonly label: string;
  readonly url: string;
  readonly script: string;
  /** CPU seconds used so far by whatever answers this side. */
  readonly cpuSeconds: () => number;
  /** A server's process: its threads are read one by one (bench/threads.ts). */
  readonly pid?: number;
  readonly runs: Run[];
}

interface Run extends WrkResult {
  readonly cpuUsPerRequest: number;
  /** CPU µs per request by thread name (actors name their threads; a build before that shows `node`). */
  readonly threads: ReadonlyMap<string, number>;
}

const KINDS = [
  { name: 'current', title: 'up-to-date' },
  { name: 'delta', title: 'signed delta' },
] as const;

export async function runHeartbeatAgainst(builds: readonly Build[]): Promise<SuiteRecord> {
  const fixture = await makeFixture('updater-bench-');
  const scripts = await mkdtemp(join(tmpdir(), 'updater-bench-wrk-'));
  const servers = new Map<string, { child: ChildProcess; url: string }>();
  const warnings = new Map<string, () => string[]>();
  let bare: Worker | undefined;
  const unpin = pinThisProcess('server');
  try {
    const v1 = await fixture.writeBinary('v1.bin', firmware(BINARY_BYTES, 'bench-v1'));
    const v2 = await fixture.writeBinary('v2.bin', nextVersion(firmware(BINARY_BYTES, 'bench-v1'), 'bench-v2'));
    const signing = { private_key_file: await writePortableKeyFile(join(fixture.dir, 'portable.key')) };
    const artifacts = [{ name: 'app', version: '2.0.0', binary: v2.path }, { name: 'legacy', version: '1.0.0', binary: v1.path }];
    for (const build of builds) {
      const port = await freePort();
      // log_level info: the process says "server started" at info.
      const doc = configDocument(fixture, port, artifacts, { default_artifact: 'app', log_level: 'info', signing, store: { dir: join(fixture.dir, `store-${build.name}`) } });
      const child = await startBuildServer(build, await writeConfig(fixture, doc, `updater-${build.name}.yaml`));
      const url = `http://127.0.0.1:${port}`;
      servers.set(build.name, { child, url });
      warnings.set(build.name, collectWarnings(child));
      await heartbeatUntilSigned(url, v1.hash, 'app');
      console.log(`  ${build.name}: ${build.root} at ${build.commit}, pid ${child.pid}`);
    }

    const hashes = { current: v2.hash, delta: v1.hash };
    const bodies = { current: heartbeatBody(v2.hash), delta: heartbeatBody(v1.hash) };
    const answers: BareWorkerData['answers'] = {};
    for (const kind of KINDS) {
      const sizes: string[] = [];
      for (const build of builds) {
        const answer = await rawAnswer(`${servers.get(build.name)!.url}/heartbeat`, bodies[kind.name]);
        const manifest = JSON.parse(answer.body) as { update_available: boolean; signature?: string };
        if (kind.name === 'current' && manifest.update_available) throw new Error(`${build.name}: the up-to-date device was offered an update`);
        if (kind.name === 'delta' && !manifest.signature) throw new Error(`${build.name}: the device on v1 did not get a signed delta`);
        answers[`/heartbeat/${kind.name}`] ??= answer;
        sizes.push(`${build.name} ${Buffer.byteLength(answer.body)}`);
      }
      console.log(`  ${kind.title} answer bytes: ${sizes.join(', ')}`);
    }
    const started = await startBareWorker(new URL('./bare-uws.js', import.meta.url), { answers } satisfies BareWorkerData);
    bare = started.worker;

    const sides: Side[] = [];
    for (const kind of KINDS) {
      // Each kind's devices are a fleet of their own, as in heartbeat.ts (FLEET_OF): a device
      // must not move between versions from one run to the next.
      const script = await writeCyclingScript(scripts, kind.name, { versionHash: hashes[kind.name] }, DEVICES, { idOffset: kind.name === 'delta' ? DEVICES : 0 });
      sides.push({ label: `bare ${kind.name}`, url: `http://127.0.0.1:${started.port}/heartbeat/${kind.name}`, script, cpuSeconds: thisProcessCpuSeconds, runs: [] });
      for (const build of builds) {
        const server = servers.get(build.name)!;
        sides.push({ label: `${build.name} ${kind.name}`, url: `${server.url}/heartbeat`, script, cpuSeconds: () => processCpuSeconds(server.child.pid!), pid: server.child.pid!, runs: [] });
      }
    }
    console.log(`  wrk -t${THREADS} -c${CONNECTIONS}, ${ROUNDS} rounds of ${SECONDS} s per target (after ${WARMUP_SECONDS} s warm-up each); ${cpuPlan().description}`);
    for (const side of sides) await measure(side, WARMUP_SECONDS);
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of roundOrder(sides, round)) {
        const run = await measure(side, SECONDS);
        side.runs.push(run);
        console.log(`  round ${round + 1} ${side.label.padEnd(16)} ${formatNumber(run.requestsPerSecond).padStart(8)} req/s  p99 ${run.latencyP99Ms.toFixed(2)} ms  cpu ${run.cpuUsPerRequest.toFixed(1)} us/req`);
      }
    }
    const record = summarize(builds, sides);
    reportWarnings(warnings, record);
    return record;
  } finally {
    if (bare) await stopBareWorker(bare);
    for (const { child } of servers.values()) await stopNodeProcess(child);
    unpin();
    await fixture.cleanup();
    await rm(scripts, { recursive: true, force: true });
  }
}

function thisProcessCpuSeconds(): number {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1e6;
}

async function measure(side: Side, seconds: number): Promise<Run> {
  const before = side.cpuSeconds();
  const threadsBefore = side.pid === undefined ? undefined : threadCpu(side.pid);
  const result = await runWrk({ url: side.url, script: side.script, threads: THREADS, connections: CONNECTIONS, seconds });
  await sleep(SETTLE_MS);
  const used = side.cpuSeconds() - before;
  const threads = new Map<string, number>();
  if (threadsBefore) for (const [name, spent] of threadCpuSince(threadsBefore, threadCpu(side.pid))) threads.set(name, (spent * 1e6) / result.requests);
  // A refused or failed request is answered fast; counting it would flatter the server.
  if (result.errors > 0) throw new Error(`${side.label}: ${result.errors} failed requests of ${result.requests}; the figure would be meaningless`);
  return { ...result, cpuUsPerRequest: (used * 1e6) / result.requests, threads };
}

function summarize(builds: readonly Build[], sides: readonly Side[]): SuiteRecord {
  const record: SuiteRecord = { connections: CONNECTIONS, wrk_threads: THREADS, seconds_per_run: SECONDS, rounds: ROUNDS, cpus: cpuPlan().description,
    builds: builds.map((b) => `${b.name}=${b.root}@${b.commit}`).join(' ') };
  const runsOf = (label: string) => sides.find((s) => s.label === label)!.runs;
  const ratios: RatioRow[] = [];
  for (const kind of KINDS) {
    const rps = (name: string) => runsOf(`${name} ${kind.name}`).map((r) => r.requestsPerSecond);
    const cpu = (name: string) => runsOf(`${name} ${kind.name}`).map((r) => r.cpuUsPerRequest);
    for (const name of ['bare', ...builds.map((b) => b.name)]) {
      record[`${kind.name}_${name}_req_per_s`] = Math.round(median(rps(name)));
      record[`${kind.name}_${name}_cpu_us_per_req`] = Number(median(cpu(name)).toFixed(1));
      // Per thread, the median over the rounds: where a build's CPU per heartbeat goes.
      const runs = runsOf(`${name} ${kind.name}`);
      const names = [...new Set(runs.flatMap((r) => [...r.threads.keys()]))].sort();
      for (const thread of names) {
        const us = median(runs.map((r) => r.threads.get(thread) ?? 0));
        if (us >= 0.05) record[`${kind.name}_${name}_thread_${thread}_us`] = Number(us.toFixed(2));
      }
    }
    ratios.push(...comparisonRows(`${kind.title} heartbeat`, 'req/s', builds, rps, { name: 'bare uWS', values: rps('bare') }, { min: GOAL_MIN_RATIO }));
    // CPU per request the other way up (earlier / later): above 1 means the later build is cheaper.
    for (const build of builds.filter((b) => b.name !== 'this')) {
      ratios.push(roundRatioRow(`${kind.title} heartbeat CPU per request, ${build.name} / this`, cpu(build.name), cpu('this'),
        { note: 'server process CPU (all threads) per heartbeat; above 1: this build is cheaper' }));
    }
  }
  record.ratios = ratios;
  return record;
}
