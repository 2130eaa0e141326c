import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import { firmware, makeFixture, sha256Hex, type Fixture } from '../test/helpers/fixture.js';
import { heartbeatUntilSigned } from '../test/helpers/http.js';
import { startTestServer, type TestServer } from '../test/helpers/server.js';
import type { BareFileData } from './bare-file.js';
import { startBareWorker, stopBareWorker } from './bare-worker.js';
import { cpuPlan, onCores, pinThisProcess } from './pinning.js';
import { formatNumber, median, type RatioRow, type SuiteRecord } from './report.js';
import { positiveInt, roundOrder, roundRatioRow } from './rounds.js';
import { runWrk, type WrkResult } from './wrk.js';

// Whole-file downloads of a 20 MiB full-mode transfer, as a client that is not our agent makes
// them (one GET, no Range), from the server's hot cache and from disk, against bare
// uWebSockets.js serving the same bytes from memory and from disk.
//
//   wrk -c8 GET ──▶ server, hot cache (hot_delta_cache_mb 64)   vs   bare /hot  (memory)
//   wrk -c8 GET ──▶ server, from disk (hot_delta_cache_mb 0)    vs   bare /disk (64 KiB reads)
//
// Every round also downloads each target once with curl and checks size and SHA-256: a
// download that stalls or ends short is counted (never thrown away), so a server that loses
// bytes cannot look fast.

const run = promisify(execFile);
const FILE_BYTES = 20 * 1024 * 1024;
/** wrk's load: 8 connections, one thread, `seconds` per run after a short warm-up, `rounds` rounds. */
const LOAD = {
  seconds: positiveInt(process.env.BENCH_DOWNLOAD_SECONDS, 5),
  rounds: positiveInt(process.env.BENCH_DOWNLOAD_ROUNDS, 3),
  connections: 8,
  warmupSeconds: 1,
} as const;
/** A whole 20 MiB download on loopback takes well under a second; 30 s means it stalled. */
const DOWNLOAD_DEADLINE_S = 30;
const GOAL_MIN_RATIO = 0.8;

interface Target {
  readonly label: 'server hot' | 'bare hot' | 'server disk' | 'bare disk';
  readonly url: string;
  readonly runs: WrkResult[];
  complete: number;
  incomplete: string[];
}

export async function runDownloadBench(): Promise<SuiteRecord> {
  const fixture = await makeFixture('updater-bench-download-');
  const unpin = pinThisProcess('server');
  const servers: TestServer[] = [];
  let bare: Worker | undefined;
  try {
    const target = await fixture.writeBinary('app.bin', firmware(FILE_BYTES, 'bench-download'));
    const stranger = sha256Hex(Buffer.from('a device whose binary the server never saw'));
    const start = async (name: string, hotMb: number) => {
      const server = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: target.path }], {
        allow_full_download: true, log_level: 'error',
        store: { dir: join(fixture.dir, `store-${name}`), hot_delta_cache_mb: hotMb, full_compression_level: 3 },
      });
      servers.push(server);
      const manifest = await heartbeatUntilSigned(server.url, stranger, 'app', 300_000);
      return { server, manifest };
    };
    const hot = await start('hot', 64);
    const disk = await start('disk', 0);
    const { manifest } = hot;
    if (disk.manifest.delta_hash !== manifest.delta_hash) throw new Error('the two servers compressed the target differently');
    const endpoint = manifest.binary_endpoint!;
    // The bare server gets the very bytes the server serves, checked against the signed hash.
    const copy = join(fixture.dir, 'transfer.zst');
    const fetched = Buffer.from(await (await fetch(`${disk.server.url}${endpoint}`)).arrayBuffer());
    if (sha256Hex(fetched) !== manifest.delta_hash) throw new Error('the file served from disk does not hash to delta_hash');
    await writeFile(copy, fetched);
    const started = await startBareWorker(new URL('./bare-file.js', import.meta.url), { path: copy } satisfies BareFileData);
    bare = started.worker;

    const targets: Target[] = [
      { label: 'server hot', url: `${hot.server.url}${endpoint}`, runs: [], complete: 0, incomplete: [] },
      { label: 'bare hot', url: `http://127.0.0.1:${started.port}/hot`, runs: [], complete: 0, incomplete: [] },
      { label: 'server disk', url: `${disk.server.url}${endpoint}`, runs: [], complete: 0, incomplete: [] },
      { label: 'bare disk', url: `http://127.0.0.1:${started.port}/disk`, runs: [], complete: 0, incomplete: [] },
    ];
    console.log(`  ${formatNumber(manifest.delta_size)} bytes per download; wrk -t1 -c${LOAD.connections}, ${LOAD.rounds} rounds of ${LOAD.seconds} s per target; ${cpuPlan().description}`);
    for (const t of targets) await runWrk({ url: t.url, threads: 1, connections: LOAD.connections, seconds: LOAD.warmupSeconds, timeoutSeconds: DOWNLOAD_DEADLINE_S });
    for (let round = 0; round < LOAD.rounds; round++) {
      for (const t of roundOrder(targets, round)) {
        await checkOneDownload(t, manifest.delta_size, manifest.delta_hash, fixture);
        const result = await runWrk({ url: t.url, threads: 1, connections: LOAD.connections, seconds: LOAD.seconds, timeoutSeconds: DOWNLOAD_DEADLINE_S });
        t.runs.push(result);
        const mbps = (result.requestsPerSecond * manifest.delta_size) / 2 ** 20;
        console.log(`  round ${round + 1} ${t.label.padEnd(11)} ${formatNumber(mbps, 0).padStart(6)} MiB/s  ${result.requests} downloads  ${result.errors} failed  p99 ${result.latencyP99Ms.toFixed(0)} ms`);
      }
    }
    return summarize(targets, manifest.delta_size);
  } finally {
    if (bare) await stopBareWorker(bare);
    for (const server of servers) await server.stop();
    unpin();
    await fixture.cleanup();
  }
}

/** One whole download with curl: complete only with every byte and the right hash. */
async function checkOneDownload(target: Target, size: number, hash: string, fixture: Fixture): Promise<void> {
  const out = join(fixture.dir, 'curl.out');
  const [file, args] = onCores('load', 'curl', ['-s', '--max-time', String(DOWNLOAD_DEADLINE_S), '-o', out, '-w', '%{size_download}', target.url]);
  const got = await run(file, args).then((r) => ({ ok: true, bytes: Number(r.stdout) }), (err: { stdout?: string; code?: number }) => ({ ok: false, bytes: Number(err.stdout ?? 0), code: err.code }));
  const bytes = got.ok ? await readFile(out) : undefined;
  if (got.ok && bytes!.length === size && createHash('sha256').update(bytes!).digest('hex') === hash) {
    target.complete++;
  } else {
    target.incomplete.push(got.ok ? `wrong bytes (${got.bytes} received)` : `stalled or cut at ${got.bytes} of ${size} bytes`);
  }
}

function summarize(targets: readonly Target[], size: number): SuiteRecord {
  const of = (label: Target['label']) => targets.find((t) => t.label === label)!;
  const mibps = (t: Target) => t.runs.map((r) => (r.requestsPerSecond * size) / 2 ** 20);
  const record: SuiteRecord = { file_bytes: size, connections: LOAD.connections, seconds_per_run: LOAD.seconds, rounds: LOAD.rounds, cpus: cpuPlan().description };
  const ratios: RatioRow[] = [];
  for (const t of targets) {
    const key = t.label.replace(' ', '_');
    record[`${key}_mib_per_s`] = Math.round(median(mibps(t)));
    record[`${key}_failed_requests`] = t.runs.reduce((sum, r) => sum + r.errors, 0);
    record[`${key}_curl_complete`] = `${t.complete} of ${t.complete + t.incomplete.length}`;
    if (t.incomplete.length > 0) record[`${key}_curl_incomplete`] = t.incomplete;
  }
  for (const where of ['hot', 'disk'] as const) {
    const server = of(`server ${where}`);
    const bare = of(`bare ${where}`);
    const failed = server.runs.reduce((sum, r) => sum + r.errors, 0);
    ratios.push(roundRatioRow(`20 MiB whole download MiB/s, server ${where === 'hot' ? 'hot cache' : 'from disk'} / bare uWS ${where === 'hot' ? 'memory' : 'disk'}`,
      mibps(server), mibps(bare), { goal: { min: GOAL_MIN_RATIO }, note: wrkNote(server, failed) }));
    ratios.push({
      name: `20 MiB whole downloads complete and correct (curl), server ${where === 'hot' ? 'hot cache' : 'from disk'}`,
      value: server.complete / Math.max(1, server.complete + server.incomplete.length),
      goal: { min: 1 },
      note: server.incomplete[0] ?? `${server.complete} of ${server.complete} checked`,
    });
  }
  record.ratios = ratios;
  return record;
}

function wrkNote(server: Target, failed: number): string {
  const finished = server.runs.reduce((sum, r) => sum + r.requests, 0);
  if (failed > 0) return `${failed} wrk downloads failed or timed out`;
  if (finished === 0) return 'no download finished within the runs (stalled)';
  return `${finished} wrk downloads finished, none failed`;
}
