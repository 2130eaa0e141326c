import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LoadReport } from '../src/load/run.js';
import { cpuPlan, onCores } from './pinning.js';
import { contentionReasons, coreUse, cpuSnapshot, type CoreUse } from './soak/cpu.js';
import type { LoadProcessMessage, LoadProcessOptions } from './soak/load-process.js';
import { summarizeLoad, type LoadSummary } from './soak/load-summary.js';
import { DEAD_BUFFER_BYTES } from '../src/shared/garbage-collector.js';
import { SQLITE_PAGE_CACHE_KIB } from '../src/shared/database/connect.js';
import { bucketPercentiles, liveReading, procMemory, rolloutStates, scrape, type BucketSummary, type LiveReading, type Scrape } from './soak/scrape.js';
import { databaseBytes, readInventory, SEEDED_DEVICES, seedInventory } from './soak/inventory.js';
import { startSoakServer, type SoakShape } from './soak/server.js';
import { snapshotBoundBytes } from './soak/snapshot-bound.js';
import { formatsOffered } from '../src/shared/delta-formats.js';
import { deviceAuthRecord, judgeDeviceAuth, type SoakDeviceAuth } from './soak/device-auth.js';
import { fillReadings, judgePlateau, mbText, type FillReading, type PlateauVerdict } from './soak/verdict.js';

// The soak of issues 6 and 15: the server in its own process on the server cores, the load in
// processes of its own on the load cores. First every budget is filled (the caches, the
// signed-manifest LRU past its size, the CoAP duplicate cache, the diff pool at its
// concurrency) and each gauge is reported against its budget; then a plateau window is judged:
// RSS under the bound docs/memory.md gives, no rising floor, no actor heap growing, the
// harness never saturated, and the heartbeat latency goal.
//
//   bench (this process) ── scrapes /metrics every second, publishes a new version now and then
//     ├─ updater serve              (server cores)
//     └─ load process × N           (load cores): devices over HTTP and CoAP, hostile inputs

const MB = 1024 * 1024;
/** A diff thread's own isolate, before any input (measured: 30-40 MB). */
const DIFF_THREAD_BASELINE_MB = 48;
/** bsdiff-node's peak per generation (docs/memory.md); the native engine's is in a child process of its own. */
const BSDIFF_NODE_FACTOR = 21;
/**
 * What the young generations of the soak's hot threads (http, coap, fleet) add under load: two
 * semispaces of a third of their 32 MiB cap each (src/supervisor/actor-host.ts, docs/memory.md).
 */
const HOT_THREADS_YOUNG_BYTES = 3 * Math.round((2 / 3) * 32 * MB);
export const LATENCY_GOAL_P99_MS = 20;
/** As deploy/updater.service sets them: the main thread's young generation capped (docs/memory.md). */
const MAIN_THREAD_NODE_OPTIONS = '--max-semi-space-size=4';
/**
 * Versions published during the run go out as staged rollouts that advance on a timer while
 * the failing share of the fleet reports failures (issue 11's soak): cohorts, stable targets
 * and rollout health counts stay busy through the plateau. The failure limit sits well above
 * the fleet's failing share, so a rollout pauses only if the counts are wrong.
 */
const SOAK_ROLLOUT = { steps: [10, 50, 100], step_interval: '30s', max_failure_rate: 0.25, min_reports: 20 } as const;
/** POST /auth a second while the fleet enrolls (SOAK_DEVICE_AUTH=on), all load processes together: 10,000 devices in about 20 s. */
const SOAK_AUTH_RATE = 500;

export interface SoakOptions {
  readonly quick: boolean;
  readonly windowSeconds: number;
  readonly fillMaxSeconds: number;
  readonly rate: number;
  readonly devices: number;
  readonly loadProcesses: number;
  readonly hostilePerSecond: number;
  /** Seconds between publishes of a new version during the run (0: none). */
  readonly publishEverySeconds: number;
  /** Share of devices whose updates fail (reported with a rollback), as in a real fleet. */
  readonly failShare: number;
  /** Pin the server and the load to separate cores where the machine allows. */
  readonly pin: boolean;
  /** Extra environment of the server process (the leak test's fault hook). */
  readonly serverEnv?: NodeJS.ProcessEnv;
  /** MALLOC_ARENA_MAX of the server process, as the systemd unit sets it (0: glibc's default). */
  readonly mallocArenaMax: number;
  /** A command the server runs under, e.g. `env NODE_OPTIONS=...` or heaptrack (SOAK_SERVER_WRAPPER, bench/README.md). */
  readonly serverWrapper: readonly string[];
  /** A command the load processes run under (the leak test's `env NODE_OPTIONS=`, which keeps tap's hooks out of them). */
  readonly loadWrapper?: readonly string[];
  /** Write V8 CPU profiles of the server and the load processes here (SOAK_CPU_PROF_DIR). */
  readonly cpuProfileDir?: string;
  readonly shape: SoakShape;
  /** The server runs with devices.auth on (enrollment preauthorized), the load with device auth (SOAK_DEVICE_AUTH=on). */
  readonly deviceAuth: boolean;
  readonly limits: { rssFloorMbPerMin: number; actorHeapMbPerMin: number };
  readonly log: (line: string) => void;
}

export function soakOptions(quick: boolean, env: NodeJS.ProcessEnv = process.env): SoakOptions {
  const num = (name: string, fallback: number) => (env[name] === undefined ? fallback : Number(env[name]));
  const deviceAuth = env.SOAK_DEVICE_AUTH ?? 'off';
  if (deviceAuth !== 'on' && deviceAuth !== 'off') throw new RangeError(`SOAK_DEVICE_AUTH must be on or off (got ${deviceAuth})`);
  // The product's default engine serves both patch formats; bsdiff-node fills the target cache.
  const deltaEngine = env.SOAK_DELTA_ENGINE ?? 'native';
  if (deltaEngine !== 'native' && deltaEngine !== 'bsdiff-node') throw new RangeError(`SOAK_DELTA_ENGINE must be native or bsdiff-node (got ${deltaEngine})`);
  return {
    quick,
    windowSeconds: num('SOAK_WINDOW_SECONDS', quick ? 60 : 600),
    fillMaxSeconds: num('SOAK_FILL_SECONDS', quick ? 90 : 240),
    rate: num('SOAK_RATE', quick ? 400 : 2000),
    devices: num('SOAK_DEVICES', quick ? 2000 : 10_000),
    loadProcesses: num('SOAK_LOAD_PROCESSES', quick ? 1 : 2),
    hostilePerSecond: num('SOAK_HOSTILE_PER_SECOND', quick ? 10 : 20),
    // A new version now and then keeps generations and retention running through the plateau
    // (the fill already drove the diff pool to its concurrency). Not in the short window:
    // the allocator's arenas still grow toward their working set there.
    publishEverySeconds: num('SOAK_PUBLISH_SECONDS', quick ? 0 : 60),
    failShare: num('SOAK_FAIL_SHARE', 0.05),
    pin: env.BENCH_PIN !== '0',
    mallocArenaMax: num('SOAK_MALLOC_ARENA_MAX', 2),
    serverWrapper: (env.SOAK_SERVER_WRAPPER ?? '').split(' ').filter(Boolean),
    ...(env.SOAK_CPU_PROF_DIR ? { cpuProfileDir: env.SOAK_CPU_PROF_DIR } : {}),
    deviceAuth: deviceAuth === 'on',
    shape: { ...(quick
      // The quick window's limits are loose enough for the page cache filling during it.
      ? { tracks: 20, versions: 4, binaryBytes: 256 * 1024, targetCacheMb: 2, hotCacheMb: 2, manifestCacheSize: 60, coapDedupBytes: 64 * 1024, deltaConcurrency: 2, fleetBufferMb: 4, seededDevices: num('SOAK_SEEDED_DEVICES', 0) }
      : { tracks: 50, versions: 6, binaryBytes: 320 * 1024, targetCacheMb: 8, hotCacheMb: 8, manifestCacheSize: 200, coapDedupBytes: 256 * 1024, deltaConcurrency: 2, fleetBufferMb: 4, seededDevices: num('SOAK_SEEDED_DEVICES', SEEDED_DEVICES) }),
      deltaEngine },
    // A 10-minute window sees a leak of 1 MB/min. A one-minute window right after the fill
    // sees the native allocator still growing toward its working set (measured 12 MB/min on a
    // loaded machine with every actor heap flat), and code still being compiled into the actors'
    // heaps: there only a fast leak shows, such as the test's planted one (46 MB/min). Actor
    // heaps are judged by what they hold alive after a full collection at the window's start
    // and end (POST /admin/memory), external memory by its floor.
    limits: quick ? { rssFloorMbPerMin: 16, actorHeapMbPerMin: 12 } : { rssFloorMbPerMin: 1, actorHeapMbPerMin: 0.5 },
    log: (line) => console.log(`  ${line}`),
  };
}

export interface SoakResult {
  /** PASS, FAIL (memory or errors), or INVALID (the harness saturated: no result). */
  readonly verdict: 'PASS' | 'FAIL' | 'INVALID';
  readonly reasons: readonly string[];
  readonly latencyGoalMet: boolean;
  readonly idleBytes: number;
  readonly boundBytes: number;
  /** The front-ends' decision snapshots (updater_decision_snapshot_bytes, both summed): their peak over the run, and the part of boundBytes that counts them. */
  readonly snapshots: { readonly peakBytes: number; readonly boundBytes: number };
  readonly fill: { readonly seconds: number; readonly readings: readonly FillReading[] };
  readonly plateau: PlateauVerdict;
  readonly load: LoadSummary;
  /**
   * Heartbeat latency as the server measured it over the plateau (handler start to answer, from
   * its /metrics histograms): beside the harness's figures, it tells server time from queueing
   * outside the handler (sockets, kernel, the harness's own loop).
   */
  readonly serverLatency: Record<string, BucketSummary>;
  readonly hostile: Record<string, number>;
  readonly cpus: string;
  /** Over the plateau: how busy the server's and the load's cores were, and by whom. */
  readonly cores?: { readonly server: CoreUse; readonly load: CoreUse };
  /** The server's memory by kind (/proc/PID/status) at the plateau's start and end. */
  readonly proc: { readonly start?: Record<string, number>; readonly end?: Record<string, number> };
  readonly loadAverage: { readonly start: number[]; readonly end: number[] };
  /** Tracks whose staged rollout is in each state at the end (versions published during the run). */
  readonly rollouts?: Record<string, number>;
  /** With SOAK_DEVICE_AUTH=on: the enrollment, re-authentications and refusals. */
  readonly deviceAuth?: SoakDeviceAuth;
}

export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const dir = await mkdtemp(join(tmpdir(), 'updater-soak-'));
  const plan = o.pin ? cpuPlan() : undefined;
  const pinned = plan?.pinned === true;
  const loadAverageStart = loadavg();
  const children: ChildProcess[] = [];
  const started = performance.now();
  const at = () => (performance.now() - started) / 1000;
  o.log(`publishing ${o.shape.tracks} tracks × ${o.shape.versions} versions of ${o.shape.binaryBytes / 1024} KiB; ${plan?.description ?? 'not pinned'}`);
  const serverCommand = (cmd: string, args: string[]): [string, string[]] => {
    const profiled = [...profileArgs(o.cpuProfileDir, 'server'), ...args];
    const [wrapper, ...wrapperArgs] = o.serverWrapper;
    const [c, a] = wrapper ? [wrapper, [...wrapperArgs, cmd, ...profiled]] : [cmd, profiled];
    return pinned ? onCores('server', c, a) : [c, a];
  };
  // As deploy/updater.service does: glibc's per-thread malloc arenas (up to 8 per core, each
  // grown and kept by whichever of the server's ~20 threads allocated in it) hold native
  // memory that no heap accounts for (docs/memory.md, "Native memory").
  const arenas = o.mallocArenaMax > 0 ? { MALLOC_ARENA_MAX: String(o.mallocArenaMax) } : {};
  // The unit's cap on the main thread's young generation, too (docs/memory.md).
  const server = await startSoakServer(dir, o.shape, serverCommand, { ...arenas, NODE_OPTIONS: MAIN_THREAD_NODE_OPTIONS, ...process.env, ...(o.cpuProfileDir ? { UPDATER_UNBUNDLED: '1' } : {}), ...o.serverEnv }, o.deviceAuth);
  let publisher: NodeJS.Timeout | undefined;
  let sampler: NodeJS.Timeout | undefined;
  let liveEndTimer: NodeJS.Timeout | undefined;
  try {
    await new Promise((r) => setTimeout(r, 3000));
    const idle = (await scrape(server.url, at()))?.rss ?? 0;
    const s = o.shape;
    // Each front-end's decision snapshot (docs/memory.md), with every version the publisher can
    // add before the plateau's last sample.
    const publishes = o.publishEverySeconds > 0 ? Math.ceil((o.fillMaxSeconds + o.windowSeconds + 60) / o.publishEverySeconds) : 0;
    const snapshotBytes = snapshotBoundBytes(s, { publishes, rollouts: publishes > 0, formats: formatsOffered(s.deltaEngine).length });
    const boundBytes = idle + (s.targetCacheMb + s.hotCacheMb) * MB + s.manifestCacheSize * 500 + snapshotBytes
      + s.deltaConcurrency * (DIFF_THREAD_BASELINE_MB * MB + (s.deltaEngine === 'bsdiff-node' ? BSDIFF_NODE_FACTOR * s.binaryBytes : 0)) + 2.125 * s.fleetBufferMb * MB + SQLITE_PAGE_CACHE_KIB * 1024
      // The store-keeper's dead buffers before its collector runs (docs/memory.md, "Dead buffers").
      + DEAD_BUFFER_BYTES
      + HOT_THREADS_YOUNG_BYTES;
    o.log(`idle RSS ${mbText(idle)} MB; documented bound ${mbText(boundBytes)} MB; ${o.devices} devices at ${o.rate} heartbeats/s in ${o.loadProcesses} load process(es)${o.deviceAuth ? `; devices.auth on, ${SOAK_AUTH_RATE} enrollments/s` : ''}`);
    // After the idle figure, which the bound starts from: a seeded database read at start would
    // count part of the page cache twice (soak/inventory.ts). SQLite takes a second writer.
    await seedInventory(server.database, s.seededDevices);

    const samples: Scrape[] = [];
    sampler = setInterval(() => void scrape(server.url, at()).then((x) => x && samples.push(x)), 1000);
    let version = s.versions;
    let nextTrack = 0;
    if (o.publishEverySeconds > 0) {
      publisher = setInterval(() => {
        const track = nextTrack++ % s.tracks;
        if (track === 0) version++;
        server.publish(track, version, SOAK_ROLLOUT).catch((err) => o.log(`publish failed: ${(err as Error).message}`));
      }, o.publishEverySeconds * 1000);
    }

    const seed = randomBytes(4).toString('hex');
    const reports = { fill: [] as LoadReport[], plateau: [] as LoadReport[] };
    const hostile: Record<string, number> = {};
    const done: Promise<void>[] = [];
    for (let part = 0; part < o.loadProcesses; part++) {
      const options: LoadProcessOptions = {
        url: server.url, coapUrl: server.coapUrl, adminToken: server.token, devices: o.devices, rate: o.rate / o.loadProcesses,
        coapShare: 0.3, oldShare: 0.3, reflashShare: 0.005, seed, part, parts: o.loadProcesses,
        fillMaxSeconds: o.fillMaxSeconds, windowSeconds: o.windowSeconds, hostilePerSecond: part === 0 ? o.hostilePerSecond : 0,
        failShare: o.failShare, authRatePerSecond: o.deviceAuth ? SOAK_AUTH_RATE / o.loadProcesses : 0,
      };
      const entry = new URL('./soak/load-process.js', import.meta.url).pathname;
      // fork() runs `execPath ...execArgv entry`: node itself, or node behind taskset and the wrapper.
      const [launcher, ...launcherArgs] = [...(pinned ? ['taskset', '-c', plan!.load] : []), ...(o.loadWrapper ?? [])];
      const child = fork(entry, [JSON.stringify(options)], launcher
        ? { execPath: launcher, execArgv: [...launcherArgs, process.execPath, ...profileArgs(o.cpuProfileDir, 'load')], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }
        : { execArgv: profileArgs(o.cpuProfileDir, 'load'), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      children.push(child);
      child.on('message', (m: LoadProcessMessage) => {
        if (m.type === 'phase') reports[m.phase].push(m.report);
        else for (const [k, v] of Object.entries(m.counts)) hostile[k] = (hostile[k] ?? 0) + v;
      });
      done.push(new Promise((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`load process ${part} exited with ${code}`))))));
    }
    const failed = Promise.all(done).then(() => undefined);
    failed.catch(() => undefined);

    // Fill: until every gauge has reached its budget, or the fill time is up.
    const budgets = { targetCacheBytes: s.deltaEngine === 'bsdiff-node' ? s.targetCacheMb * MB : 0, hotCacheBytes: s.hotCacheMb * MB, manifestEntries: s.manifestCacheSize, coapDedupBytes: s.coapDedupBytes, deltaConcurrency: s.deltaConcurrency, largestEntryBytes: s.binaryBytes + 4096 };
    const fillStart = at();
    // The fleet database's page cache fills as the whole inventory is read (soak/inventory.ts).
    const pageCacheReading = (peak: number): FillReading => {
      const limit = SQLITE_PAGE_CACHE_KIB * 1024;
      return { budget: 'SQLite page cache (SQLITE_PAGE_CACHE_KIB)', gauge: 'database bytes, every device listed through GET /admin/devices', limit, peak, filled: peak >= limit };
    };
    let pageCache: FillReading | undefined;
    const inventoryRead = s.seededDevices <= 0 ? Promise.resolve() : readInventory(server.url, server.token).then(async (listed) => {
      pageCache = pageCacheReading(listed >= s.seededDevices ? await databaseBytes(server.database) : 0);
    }, (err: Error) => o.log(`reading the inventory failed: ${err.message}`));
    const allReadings = () => [...fillReadings(samples, budgets), ...(pageCache ? [pageCache] : [])];
    const inventoryPending = () => s.seededDevices > 0 && !pageCache;
    let readings = allReadings();
    while (at() - fillStart < o.fillMaxSeconds && (inventoryPending() || !readings.every((r) => r.filled)) && children.every((c) => c.exitCode === null)) {
      await new Promise((r) => setTimeout(r, 1000));
      readings = allReadings();
    }
    await Promise.race([inventoryRead, new Promise((r) => setTimeout(r, 1000))]);
    readings = allReadings();
    if (inventoryPending()) readings.push(pageCacheReading(0));
    const fillSeconds = at() - fillStart;
    const snapshotPeak = () => samples.reduce((m, x) => Math.max(m, x.decisionSnapshots), 0);
    o.log(`decision snapshots: peak ${snapshotPeak()} of the ${snapshotBytes} bytes counted in the bound`);
    o.log(`fill ${readings.every((r) => r.filled) ? 'complete' : 'INCOMPLETE'} after ${fillSeconds.toFixed(0)} s: ${readings.map((r) => `${r.budget} ${r.peak}/${r.limit}`).join(', ')}`);
    for (const child of children) child.send({ type: 'filled' });
    const plateauStart = samples.length;
    // RSS a moment after the collections, once V8 has handed back the pages they emptied.
    const settled = async (reading: LiveReading | undefined): Promise<LiveReading | undefined> => {
      if (!reading) return undefined;
      await new Promise((r) => setTimeout(r, 2000));
      const rss = (await procMemory(server.process.pid))?.VmRSS;
      return rss === undefined ? reading : { ...reading, rss };
    };
    const liveStart = await settled(await liveReading(server.url, server.token, at()));
    // The end's reading is taken while the load still runs, as the start's was: in-flight
    // requests hold memory too, and a reading after the load stopped would hide that much growth.
    const liveEndReading = new Promise<Awaited<ReturnType<typeof liveReading>>>((resolve) => {
      liveEndTimer = setTimeout(() => resolve(liveReading(server.url, server.token, at()).then(settled)), Math.max(0, o.windowSeconds - 8) * 1000);
    });
    const procStart = await procMemory(server.process.pid);
    const loadPids = children.map((c) => c.pid);
    const cpuStart = await cpuSnapshot([server.process.pid, ...loadPids]);
    await Promise.race([failed, waitUntil(() => reports.plateau.length === o.loadProcesses)]);
    const plateauSamples = samples.slice(plateauStart);
    const liveEnd = await liveEndReading;
    const procEnd = await procMemory(server.process.pid);
    const cpuEnd = await cpuSnapshot([server.process.pid, ...loadPids]);
    const harnessCores = reports.plateau.reduce((n, r) => n + r.harness.cpu_cores, 0);
    const cores = cpuStart && cpuEnd
      ? { server: coreUse(cpuStart, cpuEnd, pinned ? plan!.server : undefined, [server.process.pid]), load: coreUse(cpuStart, cpuEnd, pinned ? plan!.load : undefined, loadPids, harnessCores) }
      : undefined;
    await failed;
    const rollouts = await rolloutStates(server.url);
    const first = plateauSamples[0];
    const last = plateauSamples[plateauSamples.length - 1];
    const serverLatency: Record<string, BucketSummary> = {};
    if (last) for (const t of ['http', 'coap'] as const) serverLatency[`${t}_heartbeat`] = bucketPercentiles(first?.serverHeartbeat[t], last.serverHeartbeat[t]);
    const plateau = judgePlateau(plateauSamples, { boundBytes, rssFloorBytesPerMinute: o.limits.rssFloorMbPerMin * MB, actorHeapBytesPerMinute: o.limits.actorHeapMbPerMin * MB }, { start: liveStart, end: liveEnd });
    const load = summarizeLoad(reports.plateau, formatsOffered(s.deltaEngine));
    const reasons = [...plateau.reasons];
    for (const r of readings) if (!r.filled) reasons.push(`budget ${r.budget} was not filled (${r.gauge} peaked at ${r.peak} of ${r.limit})`);
    reasons.push(...load.failures);
    const deviceAuth = o.deviceAuth ? await deviceAuthRecord(server.url, server.token, [...reports.fill, ...reports.plateau], hostile) : undefined;
    if (deviceAuth) reasons.push(...judgeDeviceAuth(deviceAuth, o.devices));
    const latencyGoalMet = ['http_heartbeat', 'coap_heartbeat'].every((k) => (load.latency[k]?.p99 ?? Infinity) < LATENCY_GOAL_P99_MS);
    const invalid = [...load.saturation, ...(cores ? [...contentionReasons('server', cores.server), ...contentionReasons('load generator', cores.load)] : [])];
    const verdict = invalid.length > 0 ? 'INVALID' : reasons.length === 0 ? 'PASS' : 'FAIL';
    return {
      verdict, reasons: verdict === 'INVALID' ? [...invalid, ...reasons] : reasons, ...(cores ? { cores } : {}), latencyGoalMet, idleBytes: idle, boundBytes,
      snapshots: { peakBytes: snapshotPeak(), boundBytes: snapshotBytes },
      fill: { seconds: fillSeconds, readings }, plateau, load, serverLatency, hostile, cpus: plan?.description ?? 'not pinned', proc: { ...(procStart ? { start: procStart } : {}), ...(procEnd ? { end: procEnd } : {}) }, loadAverage: { start: loadAverageStart, end: loadavg() },
      ...(rollouts ? { rollouts } : {}),
      ...(deviceAuth ? { deviceAuth } : {}),
    };
  } finally {
    clearInterval(publisher);
    clearInterval(sampler);
    clearTimeout(liveEndTimer);
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** `--cpu-prof` for a child (one .cpuprofile per thread, named by role), or nothing. The server then runs its actors unbundled, so the profile names their source files. */
function profileArgs(dir: string | undefined, role: string): string[] {
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, role)}`] : [];
}

async function waitUntil(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 250));
}

/** `npm run bench -- soak [--quick]`. */
export async function runSoakBench(): Promise<Record<string, unknown>> {
  const o = soakOptions(process.argv.includes('--quick'));
  const r = await runSoak(o);
  const actorRows = r.plateau.actors.map((a) => ({
    actor: a.actor, live_mb: `${mbText(a.live_start)} → ${mbText(a.live_end)}`, live_mb_per_min: Number(a.live_mb_per_min.toFixed(3)), used_mb: `${mbText(a.start.used)} → ${mbText(a.end.used)}`, external_mb: `${mbText(a.start.external)} → ${mbText(a.end.external)}`, array_buffers_mb: `${mbText(a.start.array_buffers)} → ${mbText(a.end.array_buffers)}`,
    used_floor_mb_per_min: Number(a.used_mb_per_min.toFixed(3)), external_floor_mb_per_min: Number(a.external_mb_per_min.toFixed(3)), blocked_share: a.blocked_share, busy_share: a.busy_share,
  }));
  return {
    mode: o.quick ? 'quick' : 'full',
    verdict: r.verdict === 'PASS' ? 'PASS' : `${r.verdict}: ${r.reasons.join('; ')}`,
    latency_goal: `heartbeat p99 < ${LATENCY_GOAL_P99_MS} ms: ${r.latencyGoalMet ? 'met' : 'MISSED'}`,
    cpus: r.cpus,
    cores: r.cores,
    malloc_arena_max: o.mallocArenaMax > 0 ? o.mallocArenaMax : 'glibc default',
    load_average: { start: r.loadAverage.start.map((n) => n.toFixed(2)).join(' '), end: r.loadAverage.end.map((n) => n.toFixed(2)).join(' ') },
    fill_seconds: Number(r.fill.seconds.toFixed(0)),
    budgets: r.fill.readings.map((x) => ({ budget: x.budget, gauge: x.gauge, peak: x.peak, limit: x.limit, filled: x.filled })),
    plateau_seconds: Number(r.plateau.seconds.toFixed(0)),
    rss_mb: {
      idle: mbText(r.idleBytes), bound: mbText(r.boundBytes), peak: mbText(r.plateau.peakBytes),
      after_collections: `${mbText(r.plateau.collectedRssStart)} → ${mbText(r.plateau.collectedRssEnd)}`, after_collections_mb_per_min: Number((r.plateau.collectedRssBytesPerMinute / MB).toFixed(3)),
      lowest_sample_first_third: mbText(r.plateau.firstFloorBytes), lowest_sample_last_third: mbText(r.plateau.lastFloorBytes), lowest_samples_mb_per_min: Number((r.plateau.rssFloorBytesPerMinute / MB).toFixed(3)),
    },
    actors: actorRows,
    server_memory_mb: Object.fromEntries(Object.entries(r.proc).map(([when, m]) => [when, Object.fromEntries(Object.entries(m).map(([k, v]) => [k, k === 'Threads' ? v : mbText(v)]))])),
    grown: r.plateau.grown,
    heartbeats_per_s: Math.round(r.load.heartbeatsPerSecond),
    downloads: r.load.downloads,
    delta_offers_by_format: r.load.deltaOffers,
    latency_ms: r.load.latency,
    server_heartbeat_latency: r.serverLatency,
    errors: r.load.errors,
    updates: { applied: r.load.updatesApplied, failed: r.load.updatesFailed, fail_share: o.failShare },
    rollouts: r.rollouts ?? {},
    harness: r.load.harness,
    hostile_inputs: r.hostile,
    device_auth: r.deviceAuth ?? 'off',
    ratios: [
      { name: 'soak peak RSS / documented bound', value: r.plateau.peakBytes / r.boundBytes, goal: { max: 1 } },
      { name: 'soak RSS floor (after full collections and a trim) growth over the plateau, MB/min', value: r.plateau.collectedRssBytesPerMinute / MB, goal: { max: o.limits.rssFloorMbPerMin } },
      { name: 'soak HTTP heartbeat p99, ms', value: r.load.latency.http_heartbeat?.p99 ?? NaN, goal: { max: LATENCY_GOAL_P99_MS } },
      { name: 'soak CoAP heartbeat p99, ms', value: r.load.latency.coap_heartbeat?.p99 ?? NaN, goal: { max: LATENCY_GOAL_P99_MS } },
    ],
  };
}
