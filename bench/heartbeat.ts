import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { firmware, makeFixture, nextVersion } from '../test/helpers/fixture.js';
import { heartbeatUntilSigned } from '../test/helpers/http.js';
import { startTestServer, type TestServer } from '../test/helpers/server.js';
import type { BareWorkerData } from './bare-uws.js';
import { startBareWorker, stopBareWorker } from './bare-worker.js';
import { cpuPlan, pinThisProcess } from './pinning.js';
import { formatNumber, median, type RatioRow, type SuiteRecord } from './report.js';
import { positiveInt, roundOrder, roundRatioRow } from './rounds.js';
import { runWrk, writePostScript, type WrkResult } from './wrk.js';

// Heartbeats per second through the whole actor path (HTTP front-end worker → manifester
// worker → back) against a bare uWebSockets.js handler answering the same bytes.
//
//   wrk ──▶ real server (in this process: supervisor + actor workers)   "subject"
//   wrk ──▶ bare handler (a worker thread in this process)              "bare"
//   wrk ──▶ bare handler + the front-end's JSON work, no actor hop      "codec"
//
// Two heartbeats: a device already on the target (row 2 of the decision table) and one that
// gets a signed delta (row 3, after the delta has been generated once). Bare and subject runs
// alternate, and each round reverses the order, so drift on a shared machine hits both sides;
// every ratio is taken per round. This process (server and bare handler alike) runs on the
// server cores, wrk on the load cores (pinning.ts).

export const SECONDS = positiveInt(process.env.BENCH_HEARTBEAT_SECONDS, 6);
export const ROUNDS = positiveInt(process.env.BENCH_HEARTBEAT_ROUNDS, 3);
export const WARMUP_SECONDS = 2;
export const CONNECTIONS = 64;
export const THREADS = 1;
export const GOAL_MIN_RATIO = 0.5;
export const BINARY_BYTES = 256 * 1024;

interface Case {
  readonly name: 'current' | 'delta';
  readonly body: string;
  answer?: { body: string; contentType: string };
  subjectScript?: string;
  bareScript?: string;
}

interface Target {
  readonly label: string;
  readonly url: string;
  readonly script: string;
  readonly runs: Run[];
}

/**
 * A wrk run plus the CPU this process spent per request meanwhile (every thread: the server's
 * actors, or the bare worker; whatever is idle costs next to nothing). Throughput suffers from
 * other load on the machine much more than CPU per request does.
 */
interface Run extends WrkResult {
  readonly cpuUsPerRequest: number;
}

export async function runHeartbeatBench(): Promise<SuiteRecord> {
  const fixture = await makeFixture('updater-bench-');
  const scripts = await mkdtemp(join(tmpdir(), 'updater-bench-wrk-'));
  let server: TestServer | undefined;
  let bare: Worker | undefined;
  const unpin = pinThisProcess('server');
  try {
    const v1 = await fixture.writeBinary('v1.bin', firmware(BINARY_BYTES, 'bench-v1'));
    const v2 = await fixture.writeBinary('v2.bin', nextVersion(firmware(BINARY_BYTES, 'bench-v1'), 'bench-v2'));
    // The `legacy` track keeps v1 known to the store, so a device on v1 gets a delta.
    server = await startTestServer(fixture, [
      { name: 'app', version: '2.0.0', binary: v2.path },
      { name: 'legacy', version: '1.0.0', binary: v1.path },
    ], { default_artifact: 'app', log_level: 'error' });
    await heartbeatUntilSigned(server.url, v1.hash, 'app');

    const cases: Case[] = [
      { name: 'current', body: heartbeatBody(v2.hash) },
      { name: 'delta', body: heartbeatBody(v1.hash) },
    ];
    for (const c of cases) {
      c.answer = await rawAnswer(`${server.url}/heartbeat`, c.body);
      const manifest = JSON.parse(c.answer.body) as { update_available: boolean; signature?: string };
      if (c.name === 'current' && manifest.update_available) throw new Error('the up-to-date device was offered an update');
      if (c.name === 'delta' && !manifest.signature) throw new Error('the device on v1 did not get a signed delta');
      c.subjectScript = await writePostScript(scripts, `subject-${c.name}`, c.body);
      c.bareScript = await writePostScript(scripts, `bare-${c.name}`, c.body);
    }

    const started = await startBareWorker(new URL('./bare-uws.js', import.meta.url), { answers: Object.fromEntries(cases.map((c) => [`/heartbeat/${c.name}`, c.answer!])) } satisfies BareWorkerData);
    bare = started.worker;
    const targets = cases.flatMap((c): Target[] => [
      { label: `bare ${c.name}`, url: `http://127.0.0.1:${started.port}/heartbeat/${c.name}`, script: c.bareScript!, runs: [] },
      { label: `codec ${c.name}`, url: `http://127.0.0.1:${started.port}/heartbeat/${c.name}/codec`, script: c.bareScript!, runs: [] },
      { label: `subject ${c.name}`, url: `${server!.url}/heartbeat`, script: c.subjectScript!, runs: [] },
    ]);

    console.log(`  wrk -t${THREADS} -c${CONNECTIONS}, ${ROUNDS} rounds of ${SECONDS} s per target (after ${WARMUP_SECONDS} s warm-up each)`);
    for (const target of targets) await measure(target, WARMUP_SECONDS);
    for (let round = 0; round < ROUNDS; round++) {
      for (const target of roundOrder(targets, round)) {
        const result = await measure(target, SECONDS);
        target.runs.push(result);
        console.log(`  round ${round + 1} ${target.label.padEnd(16)} ${formatNumber(result.requestsPerSecond).padStart(8)} req/s  p50 ${result.latencyP50Ms.toFixed(2)} ms  p99 ${result.latencyP99Ms.toFixed(2)} ms  cpu ${result.cpuUsPerRequest.toFixed(1)} us/req`);
      }
    }
    return summarize(cases, targets, v2.size);
  } finally {
    if (bare) await stopBareWorker(bare);
    await server?.stop();
    unpin();
    await fixture.cleanup();
    await rm(scripts, { recursive: true, force: true });
  }
}

async function measure(target: Target, seconds: number): Promise<Run> {
  const cpu = process.cpuUsage();
  const result = await runWrk({ url: target.url, script: target.script, threads: THREADS, connections: CONNECTIONS, seconds });
  const used = process.cpuUsage(cpu);
  // A refused or failed request is answered fast; counting it would flatter the server.
  if (result.errors > 0) throw new Error(`${target.label}: ${result.errors} failed requests of ${result.requests}; the figure would be meaningless`);
  return { ...result, cpuUsPerRequest: (used.user + used.system) / result.requests };
}

function summarize(cases: readonly Case[], targets: readonly Target[], targetSize: number): SuiteRecord {
  const record: SuiteRecord = { connections: CONNECTIONS, wrk_threads: THREADS, seconds_per_run: SECONDS, rounds: ROUNDS, binary_bytes: targetSize,
    cpus: cpuPlan().description };
  const ratios: RatioRow[] = [];
  const rps = (label: string) => median(targets.find((t) => t.label === label)!.runs.map((r) => r.requestsPerSecond));
  const p99 = (label: string) => median(targets.find((t) => t.label === label)!.runs.map((r) => r.latencyP99Ms));
  const cpu = (label: string) => median(targets.find((t) => t.label === label)!.runs.map((r) => r.cpuUsPerRequest));
  const perRound = (label: string, of: (r: Run) => number) => targets.find((t) => t.label === label)!.runs.map(of);
  const rpsOf = (r: Run) => r.requestsPerSecond;
  const cpuOf = (r: Run) => r.cpuUsPerRequest;
  for (const c of cases) {
    const bareRps = rps(`bare ${c.name}`);
    const subjectRps = rps(`subject ${c.name}`);
    record[`${c.name}_response_bytes`] = Buffer.byteLength(c.answer!.body);
    record[`${c.name}_bare_req_per_s`] = Math.round(bareRps);
    record[`${c.name}_codec_req_per_s`] = Math.round(rps(`codec ${c.name}`));
    record[`${c.name}_subject_req_per_s`] = Math.round(subjectRps);
    for (const side of ['bare', 'codec', 'subject']) record[`${c.name}_${side}_cpu_us_per_req`] = Number(cpu(`${side} ${c.name}`).toFixed(1));
    record[`${c.name}_bare_p99_ms`] = Number(p99(`bare ${c.name}`).toFixed(2));
    record[`${c.name}_subject_p99_ms`] = Number(p99(`subject ${c.name}`).toFixed(2));
    const kind = c.name === 'current' ? 'up-to-date' : 'signed delta';
    ratios.push(
      roundRatioRow(`${kind} heartbeat req/s, server / bare uWS`, perRound(`subject ${c.name}`, rpsOf), perRound(`bare ${c.name}`, rpsOf),
        { goal: { min: GOAL_MIN_RATIO }, note: `medians ${formatNumber(subjectRps, 0)} vs ${formatNumber(bareRps, 0)} req/s` }),
      roundRatioRow(`${kind} heartbeat req/s, server / bare + codec`, perRound(`subject ${c.name}`, rpsOf), perRound(`codec ${c.name}`, rpsOf),
        { note: 'same JSON work without the manifester hop: what the hop costs' }),
      roundRatioRow(`${kind} heartbeat CPU per request, bare / server`, perRound(`bare ${c.name}`, cpuOf), perRound(`subject ${c.name}`, cpuOf),
        { note: 'CPU of all threads per heartbeat: less moved by other load' }),
    );
  }
  record.ratios = ratios;
  return record;
}

export function heartbeatBody(versionHash: string): string {
  return JSON.stringify({
    device_id: 'bench-device-0001',
    version_hash: versionHash,
    hw_info: { arch: 'amd64', os: 'linux', free_ram: 268_435_456, free_disk: 1_073_741_824 },
    timestamp: 1_763_700_000,
    version: '1.0.0',
    artifact: 'app',
  });
}

/** The exact bytes the server answers, so the bare handler can answer the same. */
export async function rawAnswer(url: string, body: string): Promise<{ body: string; contentType: string }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`heartbeat answered ${response.status}: ${text}`);
  return { body: text, contentType: response.headers.get('content-type') ?? 'application/json' };
}
