import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Engine } from '../src/shared/database/schema.js';
import { adminCall } from '../test/helpers/admin.js';
import { createTestDatabase, type TestDatabase } from '../test/helpers/databases.js';
import { firmware, freePort, makeFixture, type Fixture } from '../test/helpers/fixture.js';
import { startTestServer, type TestServer } from '../test/helpers/server.js';
import { coapLoad } from './coap-load.js';
import { coapHeartbeatTemplate, cycleCoapDevices, histogramQuantile, sumMetric, writeCyclingScript } from './fleet-load.js';
import { seedDevices } from './soak/inventory.js';
import { formatNumber, median, type RatioRow, type SuiteRecord } from './report.js';
import { positiveInt } from './rounds.js';
import { threadCpu, threadCpuSince } from './threads.js';
import { runWrk } from './wrk.js';

// The fleet inventory's cost and capacity (issue 11), on SQLite and on PostgreSQL:
//
// 1. Heartbeats per second with the inventory on / the same server with it off (no goal: on
//    two shared cores it cannot be measured fairly; the heartbeat suite measures the whole
//    server, inventory on, against a bare handler)
//    (fleet.enabled: false), over HTTP (wrk) and CoAP (closed-loop UDP), each request from one
//    of DEVICES distinct device ids in turn. On and off alternate, each round in reverse order.
//    The "on" server's own metrics then say whether it kept up: dropped updates, flush lag p99.
// 2. GET /admin/fleet and the first page of GET /admin/devices with SEEDED devices in the
//    database (seeded straight through the query layer before the server starts).

const SECONDS = positiveInt(process.env.BENCH_FLEET_SECONDS, 10);
const ROUNDS = positiveInt(process.env.BENCH_FLEET_ROUNDS, 3);
const DEVICES = positiveInt(process.env.BENCH_FLEET_DEVICES, 100_000);
const SEEDED = positiveInt(process.env.BENCH_FLEET_SEEDED, 1_000_000);
const ENGINES = (process.env.BENCH_FLEET_ENGINES ?? 'sqlite,postgres').split(',') as Engine[];
const WARMUP_SECONDS = 2;
const CONNECTIONS = 64;
const COAP_IN_FLIGHT = 64;
const QUERY_SAMPLES = 15;
const GOAL_LAG_P99_S = 2;
const GOAL_QUERY_MS = 100;
/** One seeded device in this many has been quiet for two days; the others were seen within the day. */
const QUIET_EVERY = 1_000;
/**
 * The admin reads timed with SEEDED devices: the fleet summary, the first page of devices, and
 * the first page filtered by last_seen, which has no index (docs/fleet.md): seen within the
 * hour (one device in 24 matches) and not seen for a day (one in QUIET_EVERY).
 */
const QUERIES = [
  ['fleet', '/admin/fleet?artifact=app'], ['devices', '/admin/devices'],
  ['devices_seen_within_1h', '/admin/devices?seen_within=1h'], ['devices_not_seen_for_24h', '/admin/devices?not_seen_for=24h'],
] as const;

export async function runFleetBench(): Promise<SuiteRecord> {
  const record: SuiteRecord = { seconds_per_run: SECONDS, rounds: ROUNDS, distinct_devices: DEVICES, seeded_devices: SEEDED };
  const ratios: RatioRow[] = [];
  for (const engine of ENGINES) {
    const fixture = await makeFixture('updater-bench-fleet-');
    try {
      await throughput(engine, fixture, record, ratios);
      await queries(engine, fixture, record, ratios);
    } finally {
      await fixture.cleanup();
    }
  }
  record.ratios = ratios;
  return record;
}

async function throughput(engine: Engine, fixture: Fixture, record: SuiteRecord, ratios: RatioRow[]): Promise<void> {
  const binary = await fixture.writeBinary(`app-${engine}.bin`, firmware(64 * 1024, 'fleet-bench'));
  const artifacts = [{ name: 'app', version: '1.0.0', binary: binary.path }];
  const database = await createTestDatabase(engine, fixture.dir);
  const servers: Record<'on' | 'off', { server: TestServer; coapPort: number }> = {} as never;
  const scripts = await mkdtemp(join(tmpdir(), 'updater-bench-fleet-wrk-'));
  try {
    for (const side of ['on', 'off'] as const) {
      const coapPort = await freePort();
      const server = await startTestServer(fixture, artifacts, {
        listen: { coap: `127.0.0.1:${coapPort}` }, log_level: 'error',
        store: { dir: join(fixture.dir, `store-${engine}-${side}`) },
        database: database.location, fleet: { enabled: side === 'on' },
      });
      servers[side] = { server, coapPort };
    }
    const script = await writeCyclingScript(scripts, 'cycling', { versionHash: binary.hash }, DEVICES);
    const datagram = coapHeartbeatTemplate({ versionHash: binary.hash });
    const vary = cycleCoapDevices(datagram, DEVICES);
    const runs = { http: { on: [] as number[], off: [] as number[] }, coap: { on: [] as number[], off: [] as number[] } };
    /** µs of CPU per heartbeat answered, per round with the inventory on: the fleet threads, and the whole process. */
    const cpu = { http: { fleet: [] as number[], all: [] as number[] }, coap: { fleet: [] as number[], all: [] as number[] } };
    const once = async (transport: 'http' | 'coap', side: 'on' | 'off', seconds: number) => {
      const { server, coapPort } = servers[side];
      const before = threadCpu();
      let rate: number;
      if (transport === 'http') {
        const r = await runWrk({ url: `${server.url}/heartbeat`, script, threads: 1, connections: CONNECTIONS, seconds });
        if (r.errors > 0) throw new Error(`http ${side}: ${r.errors} failed requests`);
        rate = r.requestsPerSecond;
      } else {
        rate = (await coapLoad(coapPort, datagram, COAP_IN_FLIGHT, 500, seconds * 1000, vary)).perSecond;
      }
      // Both servers live in this process; the other one idles meanwhile, so its threads of
      // the same name add only their timers. The fleet thread's flush of this run's last
      // records lands in the next one's reading: a run of several seconds holds many flushes.
      const spent = threadCpuSince(before);
      if (side === 'on' && seconds === SECONDS && spent.has('fleet')) {
        const answered = rate * seconds;
        cpu[transport].fleet.push((spent.get('fleet')! / answered) * 1e6);
        cpu[transport].all.push(([...spent.values()].reduce((a, b) => a + b, 0) / answered) * 1e6);
      }
      return rate;
    };
    for (const transport of ['http', 'coap'] as const) {
      for (const side of ['on', 'off'] as const) await once(transport, side, WARMUP_SECONDS);
      for (let round = 0; round < ROUNDS; round++) {
        for (const side of round % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
          const rate = await once(transport, side, SECONDS);
          runs[transport][side].push(rate);
          console.log(`  ${engine} ${transport} round ${round + 1} inventory ${side.padEnd(3)} ${formatNumber(rate, 0).padStart(8)} heartbeats/s`);
        }
      }
    }
    // Let the last flush land, then read what the "on" server says about keeping up.
    await new Promise((r) => setTimeout(r, 2_500));
    const metrics = await (await fetch(`${servers.on.server.url}/metrics`)).text();
    const dropped = sumMetric(metrics, 'updater_fleet_dropped_updates_total');
    const lagP99 = histogramQuantile(metrics, 'updater_fleet_flush_lag_seconds', 0.99);
    const listed = await countDevices(servers.on.server.url);
    for (const transport of ['http', 'coap'] as const) {
      const on = median(runs[transport].on);
      const off = median(runs[transport].off);
      record[`${engine}_${transport}_on_per_s`] = Math.round(on);
      record[`${engine}_${transport}_off_per_s`] = Math.round(off);
      if (cpu[transport].fleet.length > 0) {
        const fleetUs = median(cpu[transport].fleet);
        const allUs = median(cpu[transport].all);
        record[`${engine}_${transport}_fleet_thread_us_per_heartbeat`] = Number(fleetUs.toFixed(2));
        record[`${engine}_${transport}_process_us_per_heartbeat`] = Number(allUs.toFixed(2));
        console.log(`  ${engine} ${transport} inventory on: fleet thread ${fleetUs.toFixed(2)} µs of CPU a heartbeat (rounds ${cpu[transport].fleet.map((v) => v.toFixed(2)).join(', ')}), the whole process ${allUs.toFixed(1)}${transport === 'coap' ? ' (the CoAP load runs in it too)' : ''}`);
      }
      ratios.push({ name: `${engine} ${transport} heartbeats/s, inventory on / off`, value: on / off, note: `${formatNumber(on, 0)} vs ${formatNumber(off, 0)}/s; the inventory's goal is the heartbeat suite's server / bare` });
    }
    record[`${engine}_dropped_updates`] = dropped;
    record[`${engine}_flush_lag_p99_s`] = lagP99;
    record[`${engine}_devices_recorded`] = listed;
    ratios.push({ name: `${engine} flush lag p99 / 2 s (lower is better)`, value: lagP99 / GOAL_LAG_P99_S, goal: { max: 1 }, note: `p99 <= ${lagP99} s; ${dropped} updates dropped; ${listed} devices recorded` });
  } finally {
    for (const side of Object.values(servers)) await side.server.stop();
    await database.drop();
    await rm(scripts, { recursive: true, force: true });
  }
}

async function queries(engine: Engine, fixture: Fixture, record: SuiteRecord, ratios: RatioRow[]): Promise<void> {
  const database = await createTestDatabase(engine, fixture.dir);
  let server: TestServer | undefined;
  try {
    const started = performance.now();
    await seed(database, SEEDED);
    const seedSeconds = (performance.now() - started) / 1000;
    console.log(`  ${engine}: seeded ${formatNumber(SEEDED, 0)} devices in ${seedSeconds.toFixed(1)} s`);
    const binary = await fixture.writeBinary(`q-${engine}.bin`, firmware(4096, 'fleet-q'));
    server = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: binary.path }], {
      log_level: 'error', store: { dir: join(fixture.dir, `store-q-${engine}`) }, database: database.location,
    });
    for (const [name, path] of QUERIES) {
      const times: number[] = [];
      for (let i = 0; i < QUERY_SAMPLES + 3; i++) {
        const t0 = performance.now();
        const answer = await adminCall(server.url, 'GET', path);
        const ms = performance.now() - t0;
        if (answer.status !== 200) throw new Error(`${path} answered ${answer.status}`);
        if (name === 'fleet' && answer.json.devices !== SEEDED) throw new Error(`the summary counted ${answer.json.devices} devices`);
        // From 100,000 seeded devices on, every filter matches more than a page.
        const page = SEEDED >= 100_000 ? 100 : 1;
        if (name !== 'fleet' && answer.json.devices.length < page) throw new Error(`${path} listed ${answer.json.devices.length} devices, fewer than ${page}`);
        if (i >= 3) times.push(ms);
      }
      const p50 = median(times);
      const worst = Math.max(...times);
      record[`${engine}_${name}_ms_p50`] = Number(p50.toFixed(1));
      record[`${engine}_${name}_ms_max`] = Number(worst.toFixed(1));
      ratios.push({ name: `${engine} GET ${path} with ${formatNumber(SEEDED, 0)} devices, ms / 100 ms`, value: p50 / GOAL_QUERY_MS, goal: { max: 1 }, note: `median ${p50.toFixed(1)} ms, worst ${worst.toFixed(1)} ms of ${QUERY_SAMPLES}` });
    }
  } finally {
    await server?.stop();
    await database.drop();
  }
}

/**
 * Devices `dev-0000000`… on five versions, written through the query layer in large
 * transactions: last seen within the day, spread across device ids (a stride through the
 * day's seconds, so no range of ids shares an hour), one in QUIET_EVERY two days ago.
 */
function seed(database: TestDatabase, count: number): Promise<void> {
  const versions = Array.from({ length: 5 }, (_, i) => ({ hash: String(i).repeat(64), version: `1.${i}.0` }));
  return seedDevices(database.location, count, (i, now) => {
    const v = versions[i % versions.length]!;
    return { deviceId: `dev-${String(i).padStart(7, '0')}`, versionHash: v.hash, version: v.version, artifact: 'app', hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 1 << 28, hwFreeDisk: 1 << 30, transport: 'http', receivedAtMs: now - ageSeconds(i) * 1000 };
  });
}

function ageSeconds(i: number): number {
  return i % QUIET_EVERY === QUIET_EVERY - 1 ? 2 * 86_400 + (i % 3_600) : (i * 7_919) % 86_400;
}

async function countDevices(url: string): Promise<number> {
  let total = 0;
  let after: string | null = null;
  do {
    const page: { json: { devices: unknown[]; next: string | null } } = await adminCall(url, 'GET', `/admin/devices?limit=1000${after ? `&after=${after}` : ''}`);
    total += page.json.devices.length;
    after = page.json.next;
  } while (after);
  return total;
}

