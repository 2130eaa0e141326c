import type { ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { KNOWN_ENTRY_BYTES } from '../src/actors/fleet/inventory/write-buffer.js';
import type { Engine } from '../src/shared/database/schema.js';
import { adminCall } from '../test/helpers/admin.js';
import { createTestDatabase, withConnection, type TestDatabase } from '../test/helpers/databases.js';
import { firmware, freePort, makeFixture, nextVersion, type Fixture } from '../test/helpers/fixture.js';
import { configDocument, writeConfig } from '../test/helpers/server.js';
import type { BareWorkerData } from './bare-uws.js';
import { collectWarnings, processCpuSeconds, reportWarnings, startNodeProcess, stopNodeProcess, THIS_ROOT } from './builds.js';
import { coapOnce, DEDUP_CACHE_BYTES } from './coap.js';
import { coapLoad, sleep } from './coap-load.js';
import { coapHeartbeatTemplate, cycleCoapDevices, deviceId, fleetHeartbeat, histogramQuantile, sumMetric, writeCyclingScript, type CyclingVariant, type HeartbeatShape } from './fleet-load.js';
import { prepareTargeted, tagCanaries } from './heartbeat-targeted.js';
import { AUTH_CONFIG, enrollFleet } from './heartbeat-auth.js';
import { cpuPlan, pinThisProcess } from './pinning.js';
import { postgresCpuSeconds, postmasterOf } from './postgres-cpu.js';
import { monotonicUs, profileText, readProfiles, type Window } from './profile.js';
import { formatNumber, median, type RatioRow, type SuiteRecord } from './report.js';
import { positiveInt, roundOrder, roundRatioRow } from './rounds.js';
import { runWrk } from './wrk.js';

// Heartbeats through the whole server as a fleet sends them, against a bare handler answering
// the same bytes (issue 31):
//
//   wrk (HTTP) / closed-loop UDP (CoAP) ──▶ `updater serve`, inventory on, SQLite     "sqlite"
//                                       ──▶ `updater serve`, inventory on, PostgreSQL "postgres"
//                                       ──▶ bare uWS handler / bare node-coap         "bare"
//
// Every request is a heartbeat from the next of DEVICES distinct device ids (fleet-load.ts),
// so no cache keyed by device flatters the server, and the inventory writes a row per device;
// each kind of answer has a fleet of its own (FLEET_OF), whose devices stay on their version.
// Every round measures each side once, back to back, the order reversed every other round;
// each ratio (throughput, and CPU per heartbeat of the whole process, from /proc) is taken per
// round. Servers and baselines are processes of their own on the server cores, the load
// generators run in this process on the load cores (pinning.ts). The machine's load average
// is printed with every figure: the bench machine is shared, and the bare handler's figure
// moves with it more than the server's.
//
// Knobs (environment): BENCH_HEARTBEAT_SECONDS, _ROUNDS, _DEVICES, _ENGINES (sqlite,postgres),
// _TRANSPORTS (http,coap), _KINDS (current; delta adds a device one version behind, answered
// with a signed delta; targeted a track with a group step and a window, heartbeat-targeted.ts), _AUTH (off | on | off,on: `devices.auth: on`, every device enrolled
// first, heartbeat-auth.ts, and the bare handler sent the same requests, tokens and all; off,on measures a server of each beside the other in the same rounds), _PROFILE (a directory: the servers run with `node --cpu-prof`, and a
// per-thread summary of where their CPU went is printed at the end, profile.ts).

export const SECONDS = positiveInt(process.env.BENCH_HEARTBEAT_SECONDS, 6);
export const ROUNDS = positiveInt(process.env.BENCH_HEARTBEAT_ROUNDS, 3);
export const WARMUP_SECONDS = 2;
/**
 * How long a run's CPU is still read after its load stops: the fleet actor writes what the
 * run's last second sent at its next flush (fleet.flush_interval, 1 s), and the write takes
 * a few tenths more. Read at once, that flush was counted to no one: not in the server's CPU a
 * heartbeat, which it flattered, and it ran during the next side's run on the same core,
 * which it slowed. Every side waits the same, the bare handlers too.
 */
export const SETTLE_MS = 1_500;
export const CONNECTIONS = 64;
export const THREADS = 1;
/** Server / bare uWS heartbeats per second. */
export const GOAL_MIN_RATIO = 0.55;
export const BINARY_BYTES = 256 * 1024;
export const DEVICES = positiveInt(process.env.BENCH_HEARTBEAT_DEVICES, 100_000);
const ENGINES = listOf('BENCH_HEARTBEAT_ENGINES', ['sqlite', 'postgres'], ['sqlite', 'postgres']) as Engine[];
const TRANSPORTS = listOf('BENCH_HEARTBEAT_TRANSPORTS', ['http', 'coap'], ['http', 'coap']) as Transport[];
const KINDS = listOf('BENCH_HEARTBEAT_KINDS', ['current'], ['current', 'delta', 'targeted']) as Kind[];
const AUTH_MODES = listOf('BENCH_HEARTBEAT_AUTH', ['off'], ['off', 'on']);
const AUTH = AUTH_MODES.includes('on');
const PROFILE_DIR = process.env.BENCH_HEARTBEAT_PROFILE;
/**
 * `fleet.buffer_mb` of each server, sized for the devices it meets (every kind's fleet) as
 * docs/fleet.md tells an operator to size it: KNOWN_ENTRY_BYTES a device, so that the write
 * buffer remembers the version of each. At the default (16 MiB, about 75,000 devices) a
 * larger fleet is mostly forgotten between two heartbeats of a device, and each heartbeat
 * then makes and drops an entry: with 200,000 devices the fleet thread cost about 8 µs a
 * heartbeat against 4.8 sized (bench/results/2026-11-29-fleet-sized-device-memory.md).
 */
const FLEET_BUFFER_MB = Math.max(16, Math.ceil((DEVICES * KINDS.length * KNOWN_ENTRY_BYTES) / 2 ** 20));
const COAP_IN_FLIGHT = 64;
const COAP_WARMUP_MS = 300;
/** Server / bare CPU per HTTP heartbeat. */
const GOAL_MAX_CPU_RATIO = 2;
const GOAL_MIN_COAP_RATIO = 0.8;
/** Device tokens on / off: heartbeats per second and CPU per heartbeat within 5 %. */
const GOAL_MIN_AUTH_RATIO = 0.95;
const GOAL_MAX_AUTH_CPU_RATIO = 1.05;
/** PostgreSQL / SQLite: heartbeats per second and CPU per heartbeat within 10 %. */
const GOAL_MIN_ENGINE_RATIO = 0.9;
const GOAL_MAX_ENGINE_CPU_RATIO = 1.1;
const GOAL_LAG_P99_S = 2;
/** A track whose rollout has a group step and a window / a plain track: within 5 % (issue 39). */
const GOAL_MIN_TARGETED_RATIO = 0.95;
const GOAL_MAX_TARGETED_CPU_RATIO = 1.05;

type Transport = 'http' | 'coap';
type Kind = 'current' | 'delta' | 'targeted';

interface Server {
  /** The engine, with `+auth` when the server runs with `devices.auth: on`. */
  readonly name: string;
  readonly engine: Engine;
  readonly auth: boolean;
  readonly child: ChildProcess;
  readonly url: string;
  readonly coapPort: number;
  readonly database: TestDatabase | undefined;
  /** The PostgreSQL server's postmaster, when it runs on this machine: its CPU is read beside the server's. */
  readonly postmaster: string | undefined;
  /** Heartbeats answered in the measured runs, and when those ran: what a profile is read over. */
  served: number;
  readonly windows: Window[];
}

interface Run {
  readonly perSecond: number;
  readonly cpuUsPerHeartbeat: number;
  /** The part of cpuUsPerHeartbeat spent after the load stopped (SETTLE_MS). */
  readonly settleUsPerHeartbeat: number;
  /** PostgreSQL's processes over the same window (SQLite's work is in cpuUsPerHeartbeat). */
  readonly databaseUsPerHeartbeat: number | undefined;
  readonly load1: number;
}

interface Side {
  readonly label: string;
  readonly transport: Transport;
  readonly kind: Kind;
  /** 'bare' (the bare handler), 'bare+auth' (the same, sent the requests of a server with device tokens on, tokens and all), or the server's name. */
  readonly name: string;
  readonly pid: number;
  readonly server?: Server;
  load(seconds: number): Promise<{ perSecond: number; answered: number }>;
  readonly runs: Run[];
}

/**
 * Each kind's devices are a fleet of their own: ids from DEVICES × this on. Sharing one fleet,
 * a device would alternate between the kinds' versions from run to run, and the inventory
 * would write a version move for nearly every heartbeat (its row read back, rewritten, and the
 * fleet's version counts changed), where a device that stays on its version has its row touched.
 * A signed delta's steady state is a device heartbeating on the old version until it updates.
 */
const FLEET_OF: Record<Kind, number> = { current: 0, targeted: 1, delta: 2 };
const idOffsetOf = (kind: Kind) => FLEET_OF[kind] * DEVICES;

/** The runs of the pass over the whole fleet before the rounds. */
const FLEET_PASS_RUN_SECONDS = 4;

/** Warm-ups are not part of a profile's reading. */
const WARM_UP = true;

export async function runHeartbeatBench(): Promise<SuiteRecord> {
  if (AUTH && TRANSPORTS.includes('coap')) {
    throw new RangeError('BENCH_HEARTBEAT_AUTH=on covers HTTP (tokens as Authorization headers); run it with BENCH_HEARTBEAT_TRANSPORTS=http');
  }
  const fixture = await makeFixture('updater-bench-hb-');
  const unpin = pinThisProcess('load');
  const servers: Server[] = [];
  const children: ChildProcess[] = [];
  const warnings = new Map<string, () => string[]>();
  let record: SuiteRecord;
  try {
    record = await measureAll(fixture, servers, children, warnings);
    reportWarnings(warnings, record);
  } finally {
    for (const s of servers) await stopNodeProcess(s.child);
    for (const c of children) await stopNodeProcess(c);
    for (const s of servers) await s.database?.drop();
    unpin();
    await fixture.cleanup();
  }
  if (PROFILE_DIR) {
    for (const s of servers) {
      console.log(`\n  where the ${s.name} server's CPU went (node --cpu-prof, ${join(PROFILE_DIR, s.name)}):`);
      console.log(profileText(await readProfiles(join(PROFILE_DIR, s.name), s.windows), s.served));
    }
  }
  return record;
}

async function measureAll(fixture: Fixture, servers: Server[], children: ChildProcess[], warnings: Map<string, () => string[]>): Promise<SuiteRecord> {
  const v1 = await fixture.writeBinary('v1.bin', firmware(BINARY_BYTES, 'bench-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(firmware(BINARY_BYTES, 'bench-v1'), 'bench-v2'));
  // The `legacy` track keeps v1 known to the store, so a device on v1 gets a delta.
  const artifacts = [{ name: 'app', version: '2.0.0', binary: v2.path }, { name: 'legacy', version: '1.0.0', binary: v1.path }];
  const shapes: Record<Kind, HeartbeatShape> = { current: { versionHash: v2.hash }, delta: { versionHash: v1.hash }, targeted: { versionHash: v2.hash } };
  const v3 = KINDS.includes('targeted') ? await fixture.writeBinary('v3.bin', nextVersion(await readFile(v2.path), 'bench-v3')) : undefined;
  let variant: CyclingVariant | undefined;
  for (const engine of ENGINES) for (const mode of AUTH_MODES) {
    const server = await startServer(fixture, engine, mode === 'on', artifacts);
    servers.push(server);
    warnings.set(server.name, collectWarnings(server.child));
    console.log(`  ${server.name}: pid ${server.child.pid}, ${server.url}, CoAP ${server.coapPort}${server.database ? `, ${server.database.location.replace(/\/\/[^@]*@/, '//')}` : ', database in the store (the default)'}${server.postmaster ? `, PostgreSQL's CPU read from its postmaster ${server.postmaster} and children` : ''}`);
  }
  // Each kind's fleet has a tokens file of its own, its first device's token first.
  const tokensFiles: Partial<Record<Kind, string>> = {};
  if (AUTH) {
    // The devices' tokens are the one server's with auth on (its own MAC key signs them).
    const authServers = servers.filter((s) => s.auth);
    if (authServers.length > 1) throw new RangeError('BENCH_HEARTBEAT_AUTH=on measures one engine at a time: set BENCH_HEARTBEAT_ENGINES');
    for (const kind of KINDS) {
      const file = join(fixture.dir, `tokens-${kind}.txt`);
      const started = performance.now();
      await enrollFleet(authServers[0]!.url, DEVICES, file, idOffsetOf(kind));
      tokensFiles[kind] = file;
      console.log(`  enrolled the ${kind} fleet's ${formatNumber(DEVICES, 0)} devices in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
  }
  if (v3) {
    if (AUTH) throw new RangeError('BENCH_HEARTBEAT_KINDS=targeted measures servers with device tokens off');
    for (const server of servers) ({ shape: shapes.targeted, variant } = await prepareTargeted(server.url, v2, v3));
  }
  // The signed delta is made on first demand: wait for it before measuring, as the delta
  // fleet's first device (its tokens file starts with that device's token, for the servers with auth on).
  if (KINDS.includes('delta')) for (const server of servers) await untilSigned(server, shapes.delta, server.auth ? tokensFiles.delta : undefined);

  // The exact bytes the servers answer, so the baselines answer the same.
  const answers: BareWorkerData['answers'] = {};
  for (const kind of KINDS.filter((k) => k !== 'targeted')) {
    const sizes: string[] = [];
    for (const server of servers) {
      const answer = await httpAnswer(`${server.url}/heartbeat`, JSON.stringify(fleetHeartbeat(deviceId(idOffsetOf(kind)), shapes[kind])), server.auth ? tokensFiles[kind] : undefined);
      const manifest = JSON.parse(answer.body) as { update_available: boolean; signature?: string };
      if (kind === 'current' && manifest.update_available) throw new Error(`${server.name}: the up-to-date device was offered an update`);
      if (kind === 'delta' && !manifest.signature) throw new Error(`${server.name}: the device one version behind did not get a signed delta`);
      answers[`/heartbeat/${kind}`] ??= answer;
      sizes.push(`${server.name} ${Buffer.byteLength(answer.body)}`);
    }
    console.log(`  ${kind} HTTP answer bytes: ${sizes.join(', ')}`);
  }
  const answersFile = join(fixture.dir, 'bare-answers.json');
  const portFile = join(fixture.dir, 'bare-port.txt');
  await writeFile(answersFile, JSON.stringify({ answers } satisfies BareWorkerData));
  const bareHttp = await startNodeProcess(join(THIS_ROOT, 'dist', 'bench', 'bare-http-server.js'), [answersFile, portFile], 'listening');
  children.push(bareHttp);
  const bareHttpUrl = `http://127.0.0.1:${(await readFile(portFile, 'utf8')).trim()}`;

  const sides: Side[] = [];
  for (const kind of KINDS) {
    // Each side's runs go on through the fleet where its last run stopped: every device is reached.
    const http = (url: string, name: string, tokens: string | undefined) => {
      let first = 0;
      return async (seconds: number) => {
        const script = await writeCyclingScript(fixture.dir, `cycling-${kind}-${name}`, shapes[kind], DEVICES,
          { tokensFile: tokens, first, idOffset: idOffsetOf(kind), ...(kind === 'targeted' ? { variant } : {}) });
        const r = await runWrk({ url, script, threads: THREADS, connections: CONNECTIONS, seconds });
        // A refused or failed request is answered fast; counting it would flatter the server.
        if (r.errors > 0) throw new Error(`${url}: ${r.errors} failed requests of ${r.requests}; the figure would be meaningless`);
        first = (first + r.requests) % DEVICES;
        return { perSecond: r.requestsPerSecond, answered: r.requests };
      };
    };
    if (TRANSPORTS.includes('http')) {
      // The targeted kind is measured against the plain track of the same server, not a bare handler.
      // With device tokens on, the bare handler gets the same requests, each with its token (which it does not read):
      // the bytes a device sends are the baseline's as much as the bytes it is answered.
      if (kind !== 'targeted') {
        for (const bare of new Set(servers.map((s) => bareSideOf(s)))) {
          sides.push({ label: `${bare} http ${kind}`, transport: 'http', kind, name: bare, pid: bareHttp.pid!, load: http(`${bareHttpUrl}/heartbeat/${kind}`, bare, bare === 'bare+auth' ? tokensFiles[kind] : undefined), runs: [] });
        }
      }
      for (const server of servers) {
        sides.push({ label: `${server.name} http ${kind}`, transport: 'http', kind, name: server.name, pid: server.child.pid!, server, load: http(`${server.url}/heartbeat`, server.name, server.auth ? tokensFiles[kind] : undefined), runs: [] });
      }
    }
  }
  // CoAP: the fleet's steady state only (a signed delta is over 3x a heartbeat: an unproven
  // address gets 4.01 with an Echo value first, docs/coap.md).
  if (TRANSPORTS.includes('coap') && KINDS.includes('current')) {
    const datagram = coapHeartbeatTemplate(shapes.current);
    const vary = cycleCoapDevices(datagram, DEVICES);
    const manifest = await coapOnce(servers[0]!.coapPort, datagram);
    const barePort = await freePort();
    const bare = await startNodeProcess(join(THIS_ROOT, 'dist', 'bench', 'coap-bare-server.js'), [String(barePort), manifest.toString('hex'), String(DEDUP_CACHE_BYTES)], 'listening');
    children.push(bare);
    console.log(`  current CoAP answer bytes: ${manifest.length}`);
    const coap = (port: number) => {
      let first = 0;
      return async (seconds: number) => {
        const from = first;
        const r = await coapLoad(port, datagram, COAP_IN_FLIGHT, COAP_WARMUP_MS, seconds * 1000, (d, n) => vary(d, from + n));
        if (Object.keys(r.codes).some((code) => code !== '2.05')) throw new Error(`CoAP port ${port}: answers ${JSON.stringify(r.codes)}; the figure would be meaningless`);
        first = (first + r.okAll) % DEVICES;
        return { perSecond: r.perSecond, answered: r.okAll };
      };
    };
    sides.push({ label: 'bare coap current', transport: 'coap', kind: 'current', name: 'bare', pid: bare.pid!, load: coap(barePort), runs: [] });
    for (const server of servers) {
      sides.push({ label: `${server.name} coap current`, transport: 'coap', kind: 'current', name: server.name, pid: server.child.pid!, server, load: coap(server.coapPort), runs: [] });
    }
  }

  const loadStart = loadavg();
  console.log(`  ${formatNumber(DEVICES, 0)} device ids in turn per kind, fleet.buffer_mb ${FLEET_BUFFER_MB} (remembers ${formatNumber(Math.floor((FLEET_BUFFER_MB * 2 ** 20) / KNOWN_ENTRY_BYTES), 0)} devices); HTTP wrk -t${THREADS} -c${CONNECTIONS}, CoAP ${COAP_IN_FLIGHT} in flight; ${ROUNDS} rounds of ${SECONDS} s per side (after ${WARMUP_SECONDS} s warm-up each); ${cpuPlan().description}`);
  for (const side of sides) await measure(side, WARMUP_SECONDS, WARM_UP);
  // Each server meets the whole fleet once before the rounds: a device's first heartbeat
  // inserts its inventory row and, with auth on, has its token's MAC verified, which later
  // heartbeats do not pay. The rounds measure the steady state of a fleet that checks in again
  // and again; without this, the first rounds of each server measured the first contact.
  const passStarted = performance.now();
  for (const side of sides) {
    if (!side.server) continue;
    for (let met = 0; met < DEVICES;) {
      const { answered } = await side.load(FLEET_PASS_RUN_SECONDS);
      if (answered === 0) throw new Error(`${side.label}: no heartbeat answered in ${FLEET_PASS_RUN_SECONDS} s of the pass over the fleet`);
      met += answered;
    }
  }
  console.log(`  every server met all ${formatNumber(DEVICES, 0)} devices once before the rounds (${((performance.now() - passStarted) / 1000).toFixed(0)} s)`);
  // The goal's flush lag is the steady state's: the first contact, which inserts every row, is
  // reported beside it from this scrape.
  const beforeRounds = new Map(await Promise.all(servers.map(async (s) => [s.name, await scrapeMetrics(s)] as const)));
  if (v3) for (const server of servers) console.log(`  ${server.name}: tagged ${formatNumber(await tagCanaries(server.url, v3.hash), 0)} devices of the targeted track's fleet`);
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of roundOrder(sides, round)) {
      const run = await measure(side, SECONDS);
      side.runs.push(run);
      const database = run.databaseUsPerHeartbeat === undefined ? '' : `, PostgreSQL ${run.databaseUsPerHeartbeat.toFixed(1)} more`;
      console.log(`  round ${round + 1} ${side.label.padEnd(22)} ${formatNumber(run.perSecond, 0).padStart(8)} heartbeats/s  cpu ${run.cpuUsPerHeartbeat.toFixed(1).padStart(5)} us/heartbeat (${run.settleUsPerHeartbeat.toFixed(1)} of it after the load${database})  (load ${run.load1.toFixed(2)})`);
    }
  }
  const loadEnd = loadavg();

  // Let the last flush land, then read what each server says about keeping up.
  await sleep(2_500);
  const record: SuiteRecord = {
    distinct_devices: DEVICES, fleet_buffer_mb: FLEET_BUFFER_MB, connections: CONNECTIONS, coap_in_flight: COAP_IN_FLIGHT, seconds_per_run: SECONDS, rounds: ROUNDS,
    auth: AUTH_MODES.join(','), cpus: cpuPlan().description,
    load_average: `${loadStart.map((n) => n.toFixed(2)).join(' ')} at the start, ${loadEnd.map((n) => n.toFixed(2)).join(' ')} at the end`,
  };
  const ratios: RatioRow[] = [];
  for (const side of sides) {
    const key = side.label.replace(/ /g, '_');
    record[`${key}_per_s`] = Math.round(median(side.runs.map((r) => r.perSecond)));
    record[`${key}_cpu_us`] = Number(median(side.runs.map((r) => r.cpuUsPerHeartbeat)).toFixed(1));
    const database = side.runs.map((r) => r.databaseUsPerHeartbeat);
    if (database.every((us) => us !== undefined)) record[`${key}_database_cpu_us`] = Number(median(database).toFixed(1));
  }
  for (const server of servers) {
    const metrics = await scrapeMetrics(server);
    // Like the flush lag, the goal is the steady state's: what the first contact dropped or lost is shown beside it.
    const before = beforeRounds.get(server.name)!;
    const firstContactDropped = sumMetric(before, 'updater_fleet_dropped_updates_total');
    const firstContactLost = sumMetric(before, 'updater_fleet_feed_lost_total');
    const dropped = sumMetric(metrics, 'updater_fleet_dropped_updates_total') - firstContactDropped;
    const feedLost = sumMetric(metrics, 'updater_fleet_feed_lost_total') - firstContactLost;
    const lagP99 = histogramQuantile(metrics, 'updater_fleet_flush_lag_seconds', 0.99, beforeRounds.get(server.name));
    const firstContactLagP99 = histogramQuantile(beforeRounds.get(server.name)!, 'updater_fleet_flush_lag_seconds', 0.99);
    // How long one flush took over the rounds: a flush longer than the interval is what lag is made of.
    const flushP50 = histogramQuantile(metrics, 'updater_fleet_flush_seconds', 0.5, beforeRounds.get(server.name));
    const flushP99 = histogramQuantile(metrics, 'updater_fleet_flush_seconds', 0.99, beforeRounds.get(server.name));
    const summary = await adminCall(server.url, 'GET', '/admin/fleet?artifact=app');
    const recorded = summary.status === 200 ? Number(summary.json.devices) : Number.NaN;
    // The track `app` holds the fleets of the current and delta kinds (targeted has a track of its own).
    const fleetOfApp = DEVICES * KINDS.filter((k) => k !== 'targeted').length;
    Object.assign(record, { [`${server.name}_dropped_updates`]: dropped, [`${server.name}_feed_lost`]: feedLost,
      [`${server.name}_first_contact_dropped_updates`]: firstContactDropped, [`${server.name}_first_contact_feed_lost`]: firstContactLost, [`${server.name}_flush_lag_p99_s`]: lagP99, [`${server.name}_first_contact_flush_lag_p99_s`]: firstContactLagP99,
      [`${server.name}_flush_seconds_p50`]: flushP50, [`${server.name}_flush_seconds_p99`]: flushP99, [`${server.name}_devices_recorded`]: recorded });
    ratios.push(
      { name: `${server.name} flush lag p99 / ${GOAL_LAG_P99_S} s`, value: lagP99 / GOAL_LAG_P99_S, goal: { max: 1 }, note: `p99 <= ${lagP99} s over the rounds; <= ${firstContactLagP99} s while every row was first written` },
      { name: `${server.name} inventory updates dropped or lost`, value: dropped + feedLost, goal: { max: 0 }, note: `over the rounds ${dropped} dropped by the buffer, ${feedLost} lost by the front-ends; while every row was first written ${firstContactDropped} dropped and ${firstContactLost} lost; ${recorded} of ${fleetOfApp} devices recorded` },
    );
  }
  ratios.push(...ratioRows(sides, servers));
  record.ratios = ratios;
  return record;
}

function ratioRows(sides: readonly Side[], servers: readonly Server[]): RatioRow[] {
  const rows: RatioRow[] = [];
  const find = (transport: Transport, kind: Kind, name: Side['name']) => sides.find((s) => s.transport === transport && s.kind === kind && s.name === name);
  const rate = (s: Side) => s.runs.map((r) => r.perSecond);
  const cpu = (s: Side) => s.runs.map((r) => r.cpuUsPerHeartbeat);
  for (const { name } of servers) {
    const targeted = find('http', 'targeted', name);
    const plain = find('http', 'current', name);
    if (!targeted || !plain) continue;
    rows.push(
      roundRatioRow(`${name} HTTP heartbeat/s, group step and window / plain track`, rate(targeted), rate(plain), { goal: { min: GOAL_MIN_TARGETED_RATIO } }),
      roundRatioRow(`${name} HTTP heartbeat CPU, group step and window / plain track`, cpu(targeted), cpu(plain), { goal: { max: GOAL_MAX_TARGETED_CPU_RATIO } }),
    );
  }
  for (const transport of TRANSPORTS) {
    for (const kind of KINDS) {
      const what = `${transport.toUpperCase()} ${kind === 'current' ? 'up-to-date' : 'signed-delta'} heartbeat`;
      for (const server of servers) {
        const bare = find(transport, kind, transport === 'http' ? bareSideOf(server) : 'bare');
        if (!bare) continue;
        const bareName = transport === 'coap' ? 'bare node-coap' : server.auth ? 'bare uWS sent the tokens' : 'bare uWS';
        const { name } = server;
        const side = find(transport, kind, name)!;
        rows.push(
          roundRatioRow(`${name} ${what}/s, server / ${bareName}`, rate(side), rate(bare),
            { goal: { min: transport === 'http' ? GOAL_MIN_RATIO : GOAL_MIN_COAP_RATIO }, note: `medians ${formatNumber(median(rate(side)), 0)} vs ${formatNumber(median(rate(bare)), 0)}/s` }),
          roundRatioRow(`${name} ${what} CPU, server / ${bareName}`, cpu(side), cpu(bare),
            { ...(transport === 'http' ? { goal: { max: GOAL_MAX_CPU_RATIO } } : {}), note: `medians ${median(cpu(side)).toFixed(1)} vs ${median(cpu(bare)).toFixed(1)} us a heartbeat, all threads` }),
        );
      }
      for (const engine of ENGINES) {
        const on = find(transport, kind, `${engine}+auth`);
        const off = find(transport, kind, engine);
        if (!on || !off) continue;
        rows.push(
          roundRatioRow(`${engine} ${what}/s, device tokens on / off`, rate(on), rate(off), { goal: { min: GOAL_MIN_AUTH_RATIO } }),
          roundRatioRow(`${engine} ${what} CPU, device tokens on / off`, cpu(on), cpu(off), { goal: { max: GOAL_MAX_AUTH_CPU_RATIO } }),
        );
      }
      const pg = find(transport, kind, 'postgres');
      const lite = find(transport, kind, 'sqlite');
      if (pg && lite) {
        rows.push(
          roundRatioRow(`${what}/s, postgres / sqlite`, rate(pg), rate(lite), { goal: { min: GOAL_MIN_ENGINE_RATIO } }),
          roundRatioRow(`${what} CPU, postgres / sqlite`, cpu(pg), cpu(lite), { goal: { max: GOAL_MAX_ENGINE_CPU_RATIO }, note: 'the server process only; PostgreSQL\'s own processes are in the next row' }),
        );
        const database = pg.runs.map((r) => r.databaseUsPerHeartbeat);
        if (database.every((us) => us !== undefined)) {
          // No goal: the engines' CPU goal is the server process's (above). This row says what the
          // rate's ratio pays for where the database shares the machine's cores (docs/fleet.md).
          rows.push(roundRatioRow(`${what} CPU with the database, postgres / sqlite`, pg.runs.map((r) => r.cpuUsPerHeartbeat + r.databaseUsPerHeartbeat!), cpu(lite),
            { note: `medians ${median(cpu(pg)).toFixed(1)} + ${median(database).toFixed(1)} us in PostgreSQL's processes vs ${median(cpu(lite)).toFixed(1)} us (SQLite is in the server)` }));
        }
      }
    }
  }
  return rows;
}

/** The HTTP baseline a server is held to: the bare handler given the same requests, tokens and all. */
function bareSideOf(server: Server): 'bare' | 'bare+auth' {
  return server.auth ? 'bare+auth' : 'bare';
}

async function measure(side: Side, seconds: number, warmUp = false): Promise<Run> {
  const postmaster = side.server?.postmaster;
  const databaseBefore = postmaster ? postgresCpuSeconds(postmaster) : 0;
  const before = processCpuSeconds(side.pid);
  const started = monotonicUs();
  const { perSecond, answered } = await side.load(seconds);
  const loaded = processCpuSeconds(side.pid);
  await sleep(SETTLE_MS);
  const after = processCpuSeconds(side.pid);
  const databaseAfter = postmaster ? postgresCpuSeconds(postmaster) : 0;
  if (side.server && !warmUp) {
    side.server.served += answered;
    side.server.windows.push([started, monotonicUs()]);
  }
  const perHeartbeat = (cpuSeconds: number) => (cpuSeconds * 1e6) / Math.max(1, answered);
  return {
    perSecond, cpuUsPerHeartbeat: perHeartbeat(after - before), settleUsPerHeartbeat: perHeartbeat(after - loaded),
    databaseUsPerHeartbeat: postmaster ? perHeartbeat(databaseAfter - databaseBefore) : undefined, load1: loadavg()[0]!,
  };
}

async function startServer(fixture: Fixture, engine: Engine, auth: boolean, artifacts: { name: string; version: string; binary: string }[]): Promise<Server> {
  const name = auth ? `${engine}+auth` : engine;
  const port = await freePort();
  const coapPort = await freePort();
  // SQLite is the default: no `database` key, the file in the store.
  const database = engine === 'postgres' ? await createTestDatabase('postgres', fixture.dir) : undefined;
  const doc = configDocument(fixture, port, artifacts, {
    listen: { http: `127.0.0.1:${port}`, coap: `127.0.0.1:${coapPort}` },
    coap: { dedup_cache_bytes: DEDUP_CACHE_BYTES },
    default_artifact: 'app',
    // info: the process says "server started" at info.
    log_level: 'info',
    store: { dir: join(fixture.dir, `store-${name}`) },
    fleet: { buffer_mb: FLEET_BUFFER_MB },
    ...(database ? { database: database.location } : {}),
    ...(auth ? AUTH_CONFIG : {}),
  });
  const config = await writeConfig(fixture, doc, `updater-${name}.yaml`);
  let nodeArgs: string[] = [];
  if (PROFILE_DIR) {
    await mkdir(join(PROFILE_DIR, name), { recursive: true });
    nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${join(PROFILE_DIR, name)}`];
  }
  try {
    // A profile names each actor's source files only when the actors run unbundled (actor-host.ts).
    const child = await startNodeProcess(join(THIS_ROOT, 'bin', 'updater.js'), ['serve', '--config', config], '"server started"', nodeArgs, PROFILE_DIR ? { UPDATER_UNBUNDLED: '1' } : {});
    const postmaster = database ? await withConnection(database.location, postmasterOf) : undefined;
    return { name, engine, auth, child, url: `http://127.0.0.1:${port}`, coapPort, database, postmaster, served: 0, windows: [] };
  } catch (err) {
    await database?.drop();
    throw err;
  }
}

/** The token of a fleet's first device: the first line of its tokens file. */
async function firstToken(tokensFile: string | undefined): Promise<string | undefined> {
  return tokensFile ? (await readFile(tokensFile, 'utf8')).split('\n')[0] : undefined;
}

/** The exact bytes the server answers (with a device token when the load carries them). */
async function httpAnswer(url: string, body: string, tokensFile: string | undefined): Promise<{ body: string; contentType: string }> {
  const token = await firstToken(tokensFile);
  return rawAnswer(url, body, token ? { authorization: `Bearer ${token}` } : {});
}

/** One heartbeat from one device, for the single-device comparisons of heartbeat-against.ts. */
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

/** Heartbeats as the delta fleet's first device until the answer is signed (the delta is made). */
async function untilSigned(server: Server, shape: HeartbeatShape, tokensFile: string | undefined): Promise<void> {
  const token = await firstToken(tokensFile);
  const body = JSON.stringify(fleetHeartbeat(deviceId(idOffsetOf('delta')), shape));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const answer = await rawAnswer(`${server.url}/heartbeat`, body, token ? { authorization: `Bearer ${token}` } : {});
    if ((JSON.parse(answer.body) as { signature?: string }).signature) return;
    if (Date.now() > deadline) throw new Error(`${server.name}: no signed answer within 60 s: ${answer.body}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function rawAnswer(url: string, body: string, headers: Record<string, string> = {}): Promise<{ body: string; contentType: string }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`heartbeat answered ${response.status}: ${text}`);
  return { body: text, contentType: response.headers.get('content-type') ?? 'application/json' };
}

/** A comma-separated list from the environment, each value one of `allowed`. */
function listOf(name: string, fallback: readonly string[], allowed: readonly string[]): string[] {
  const text = process.env[name];
  if (text === undefined || text.trim() === '') return [...fallback];
  const values = text.split(',').map((v) => v.trim()).filter((v) => v !== '');
  const wrong = values.filter((v) => !allowed.includes(v));
  if (wrong.length > 0 || values.length === 0) throw new RangeError(`${name}: ${wrong.join(', ') || '(empty)'} is not one of ${allowed.join(', ')}`);
  return values;
}

function scrapeMetrics(server: Server): Promise<string> {
  return fetch(`${server.url}/metrics`).then((r) => r.text());
}
