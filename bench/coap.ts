import { spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { generate, parse } from 'coap-packet';
import { stringify } from 'yaml';
import { encodeHeartbeat } from '../src/shared/wire/cbor.js';
import { ECHO_OPTION, echoValue } from '../src/shared/wire/echo.js';
import { writePrivateKeyFile } from '../src/shared/signing.js';
import { freePort } from '../test/helpers/fixture.js';
import { coapLoad, peakRss, sleep, type LoadResult } from './coap-load.js';
import { startNodeProcess, stopNodeProcess, THIS_ROOT } from './builds.js';
import { cpuPlan, onCores, pinThisProcess } from './pinning.js';
import { median } from './report.js';
import { perRoundRatios, positiveInt, roundOrder, roundRatioRow } from './rounds.js';

// CoAP heartbeats per second through the whole server (front-end thread → manifester thread
// → back) against a bare node-coap server answering the same CBOR, and against HTTP
// heartbeats of the same server; the server's peak RSS under CoAP load; and how much smaller
// CBOR with integer keys makes a typical heartbeat and manifest than JSON.
// Every server runs in its own process (on the server cores); the load generators run in this
// one (on the load cores, pinning.ts). The three loads (CoAP through the server, CoAP against
// bare node-coap, HTTP through the server) are repeated for ROUNDS rounds, the order reversed
// every other round, and each ratio is taken per round.

export const IN_FLIGHT = 64;
export const WARMUP_MS = 1_500;
export const MEASURE_MS = positiveInt(process.env.BENCH_COAP_SECONDS, 5) * 1000;
export const ROUNDS = positiveInt(process.env.BENCH_COAP_ROUNDS, 3);
export const DEDUP_CACHE_BYTES = 1024 * 1024;

export async function runCoapBench(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'updater-bench-coap-'));
  const unpin = pinThisProcess('load');
  try {
    return await benchIn(dir);
  } finally {
    unpin();
    await rm(dir, { recursive: true, force: true });
  }
}

interface Load {
  readonly label: 'server coap' | 'bare coap' | 'server http';
  run(): Promise<{ perSecond: number; peakRssBytes?: number; detail?: LoadResult; tool?: string }>;
  readonly rounds: { perSecond: number; peakRssBytes?: number; detail?: LoadResult; tool?: string }[];
}

async function benchIn(dir: string): Promise<Record<string, unknown>> {
  const { v1, v2 } = await writeTrackBinaries(dir);
  await writePrivateKeyFile(join(dir, 'signing.key'));
  const httpPort = await freePort();
  const coapPort = await freePort();
  const configPath = await writeCoapServerConfig(dir, 'updater.yaml', { store: join(dir, 'store'), httpPort, coapPort, v1, v2 });

  const server = await startNodeProcess(join(THIS_ROOT, 'bin', 'updater.js'), ['serve', '--config', configPath], '"server started"');
  let bare: ChildProcess | undefined;
  let sizes: Record<string, number>;
  let manifestBytes: Buffer;
  const httpUrl = `http://127.0.0.1:${httpPort}`;
  const v1Hash = sha256(await readFile(v1));
  const v2Hash = sha256(await readFile(v2));
  const loads: Load[] = [];
  try {
    // A typical signed manifest: a device one version behind, once its delta exists.
    const signedJson = await signedManifestJson(httpUrl, v1Hash);
    const signedCbor = await coapOnce(coapPort, heartbeatDatagram(v1Hash));
    const heartbeatJson = JSON.stringify(heartbeatFields(v1Hash));
    sizes = {
      heartbeat_json_bytes: Buffer.byteLength(heartbeatJson),
      heartbeat_cbor_bytes: heartbeatCbor(v1Hash).length,
      manifest_json_bytes: Buffer.byteLength(signedJson),
      manifest_cbor_bytes: signedCbor.length,
      heartbeat_coap_datagram_bytes: heartbeatDatagram(v1Hash).length,
    };
    // The load is the fleet's steady state: devices on the current target.
    manifestBytes = await coapOnce(coapPort, heartbeatDatagram(v2Hash));
    const barePort = await freePort();
    bare = await startNodeProcess(join(THIS_ROOT, 'dist', 'bench', 'coap-bare-server.js'), [String(barePort), manifestBytes.toString('hex'), String(DEDUP_CACHE_BYTES)], 'listening');
    const coapAgainst = (pid: number, port: number) => async () => {
      const { result, peakRssBytes } = await peakRss(pid, coapLoad(port, heartbeatDatagram(v2Hash), IN_FLIGHT, WARMUP_MS, MEASURE_MS));
      return { perSecond: result.perSecond, peakRssBytes, detail: result };
    };
    const bareProcess = bare;
    loads.push(
      { label: 'server coap', run: coapAgainst(server.pid!, coapPort), rounds: [] },
      { label: 'bare coap', run: coapAgainst(bareProcess.pid!, barePort), rounds: [] },
      { label: 'server http', run: () => httpLoad(httpUrl, JSON.stringify(heartbeatFields(v2Hash))), rounds: [] },
    );
    console.log(`  ${ROUNDS} rounds of ${MEASURE_MS / 1000} s per load (after ${WARMUP_MS / 1000} s warm-up each); ${cpuPlan().description}`);
    for (let r = 0; r < ROUNDS; r++) {
      for (const load of roundOrder(loads, r)) {
        const outcome = await load.run();
        load.rounds.push(outcome);
        console.log(`  round ${r + 1} ${load.label.padEnd(12)} ${String(outcome.perSecond).padStart(7)} heartbeats/s`);
      }
    }
  } finally {
    await stopNodeProcess(server);
    if (bare) await stopNodeProcess(bare);
  }

  const [serverCoap, bareCoap, serverHttp] = loads.map((l) => l.rounds) as [Load['rounds'], Load['rounds'], Load['rounds']];
  const perSecond = (rounds: Load['rounds']) => rounds.map((x) => x.perSecond);
  const vsBare = perRoundRatios(perSecond(serverCoap), perSecond(bareCoap).map((n) => Math.max(1, n)));
  const vsHttp = perRoundRatios(perSecond(serverCoap), perSecond(serverHttp).map((n) => Math.max(1, n)));
  const last = serverCoap[serverCoap.length - 1]!.detail!;
  const results: Record<string, unknown> = {
    coap_in_flight: IN_FLIGHT,
    rounds: ROUNDS,
    seconds_per_run: MEASURE_MS / 1000,
    cpus: cpuPlan().description,
    coap_heartbeats_per_s: Math.round(median(perSecond(serverCoap))),
    bare_node_coap_heartbeats_per_s: Math.round(median(perSecond(bareCoap))),
    coap_vs_bare_ratio: round(vsBare.median),
    coap_vs_bare_per_round: vsBare.perRound.map(round),
    http_heartbeats_per_s: Math.round(median(perSecond(serverHttp))),
    http_load_tool: [...new Set(serverHttp.map((x) => x.tool))].join(', '),
    coap_vs_http_ratio: round(vsHttp.median),
    server_peak_rss_mb: round(Math.max(...serverCoap.map((x) => x.peakRssBytes!)) / 2 ** 20),
    bare_peak_rss_mb: round(Math.max(...bareCoap.map((x) => x.peakRssBytes!)) / 2 ** 20),
    coap_dedup_cache_bytes: DEDUP_CACHE_BYTES,
    coap_codes_last_round: last.codes,
    coap_lost: serverCoap.reduce((sum, x) => sum + x.detail!.lost, 0),
    ...sizes,
    heartbeat_cbor_vs_json: round(sizes.heartbeat_cbor_bytes! / sizes.heartbeat_json_bytes!),
    manifest_cbor_vs_json: round(sizes.manifest_cbor_bytes! / sizes.manifest_json_bytes!),
  };
  printTable(results);
  // Rows for the summary table of bench/run.ts, with the goal where it sets one.
  results.ratios = [
    roundRatioRow('CoAP heartbeats/s, server / bare node-coap', perSecond(serverCoap), perSecond(bareCoap).map((n) => Math.max(1, n)), { goal: { min: 0.8 } }),
    roundRatioRow('CoAP / HTTP heartbeats/s through the server', perSecond(serverCoap), perSecond(serverHttp).map((n) => Math.max(1, n))),
    { name: 'heartbeat bytes, CBOR / JSON', value: results.heartbeat_cbor_vs_json as number },
    { name: 'manifest bytes, CBOR / JSON', value: results.manifest_cbor_vs_json as number },
  ];
  return results;
}

/** The two versions the suite publishes: 256 KiB of random bytes, and the same plus 4 KiB. */
export async function writeTrackBinaries(dir: string): Promise<{ v1: string; v2: string }> {
  const v1 = join(dir, 'v1.bin');
  const v2 = join(dir, 'v2.bin');
  const base = randomBytes(256 * 1024);
  await writeFile(v1, base);
  await writeFile(v2, Buffer.concat([base, randomBytes(4096)]));
  return { v1, v2 };
}

/** The server's configuration for this suite: HTTP and CoAP listeners, the two tracks. */
export async function writeCoapServerConfig(dir: string, name: string,
  at: { store: string; httpPort: number; coapPort: number; v1: string; v2: string }): Promise<string> {
  const configPath = join(dir, name);
  await writeFile(configPath, stringify({
    listen: { http: `127.0.0.1:${at.httpPort}`, coap: `127.0.0.1:${at.coapPort}` },
    signing: { private_key_file: join(dir, 'signing.key') },
    admin: { token: 'b'.repeat(40) },
    store: { dir: at.store, full_compression_level: 3 },
    coap: { dedup_cache_bytes: DEDUP_CACHE_BYTES },
    log_level: 'info',
    artifacts: [{ name: 'app', version: '2.0.0', binary: at.v2 }, { name: 'legacy', version: '1.0.0', binary: at.v1 }],
    default_artifact: 'app',
  }));
  return configPath;
}

export function heartbeatFields(versionHash: string): Record<string, unknown> {
  return {
    device_id: 'bench-device-000001',
    version_hash: versionHash,
    hw_info: { arch: 'arm64', os: 'linux', free_ram: 512 * 2 ** 20, free_disk: 8 * 2 ** 30 },
    timestamp: 1_763_700_000,
    version: '1.0.0',
    artifact: 'app',
  };
}

function heartbeatCbor(versionHash: string): Buffer {
  return encodeHeartbeat(heartbeatFields(versionHash));
}

export function heartbeatDatagram(versionHash: string): Buffer {
  return generate({
    code: 'POST', confirmable: true, messageId: 1, token: Buffer.alloc(4),
    options: [{ name: 'Uri-Path', value: Buffer.from('heartbeat') }, { name: 'Content-Format', value: Buffer.from([60]) }],
    payload: heartbeatCbor(versionHash),
  });
}

async function signedManifestJson(url: string, versionHash: string): Promise<string> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const response = await fetch(`${url}/heartbeat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(heartbeatFields(versionHash)) });
    const text = await response.text();
    if (response.ok && JSON.parse(text).signature) return text;
    await sleep(200);
  }
  throw new Error('the benchmark server produced no signed manifest within 60 s');
}

/**
 * One CoAP exchange; resolves with the response payload. A 4.01 with an Echo value (a short
 * heartbeat whose signed manifest is over 3x its size, docs/coap.md "Amplification") is
 * answered the way a device does: the same request again, with the value.
 */
export async function coapOnce(port: number, datagram: Buffer): Promise<Buffer> {
  const answer = parse(await coapExchange(port, datagram));
  const echo = echoValue(answer.options);
  if (answer.code !== '4.01' || !echo) return answer.payload;
  const request = parse(datagram);
  const again = generate({ ...request, options: [...request.options, { name: String(ECHO_OPTION), value: echo }] } as Parameters<typeof generate>[0]);
  return parse(await coapExchange(port, again)).payload;
}

function coapExchange(port: number, datagram: Buffer): Promise<Buffer> {
  const socket = createSocket('udp4');
  return new Promise<Buffer>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no CoAP answer within 5 s')), 5_000);
    socket.on('message', (msg) => {
      if (msg[1] === 0) return;
      clearTimeout(timer);
      resolve(msg);
    });
    socket.send(datagram, port, '127.0.0.1');
  }).finally(() => socket.close());
}

/** HTTP heartbeats with the same number in flight: wrk when installed, else fetch. */
async function httpLoad(url: string, body: string): Promise<{ perSecond: number; tool: string }> {
  const script = join(tmpdir(), `updater-bench-heartbeat-${process.pid}.lua`);
  await writeFile(script, `wrk.method = "POST"\nwrk.body = ${JSON.stringify(body)}\nwrk.headers["Content-Type"] = "application/json"\n`);
  try {
    const seconds = Math.round(MEASURE_MS / 1000);
    const [file, args] = onCores('load', 'wrk', ['-t1', `-c${IN_FLIGHT}`, `-d${seconds}s`, '-s', script, `${url}/heartbeat`]);
    const run = spawnSync(file, args, { encoding: 'utf8', timeout: MEASURE_MS + 10_000 });
    const match = /Requests\/sec:\s+([\d.]+)/.exec(run.stdout ?? '');
    if (run.status === 0 && match && !/Non-2xx/.test(run.stdout)) return { perSecond: Math.round(Number(match[1])), tool: 'wrk' };
  } finally {
    await rm(script, { force: true });
  }
  return { perSecond: await fetchLoad(url, body), tool: 'fetch' };
}

async function fetchLoad(url: string, body: string): Promise<number> {
  let done = 0;
  let counting = false;
  const end = Date.now() + WARMUP_MS + MEASURE_MS;
  setTimeout(() => (counting = true), WARMUP_MS);
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (Date.now() < end) {
      const response = await fetch(`${url}/heartbeat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await response.arrayBuffer();
      if (counting && response.ok) done++;
    }
  }));
  return Math.round(done / (MEASURE_MS / 1000));
}

export function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export function round(n: number): number {
  return Math.round(n * 100) / 100;
}

function printTable(results: Record<string, unknown>): void {
  const width = Math.max(...Object.keys(results).map((k) => k.length));
  console.log('\nCoAP front-end benchmark');
  for (const [key, value] of Object.entries(results)) {
    console.log(`  ${key.padEnd(width)}  ${typeof value === 'object' ? JSON.stringify(value) : String(value)}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runCoapBench().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
