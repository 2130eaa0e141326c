import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/helpers/fixture.js';
import { comparisonRows, processCpuSeconds, collectWarnings, reportWarnings, startBuildServer, startNodeProcess, stopNodeProcess, THIS_ROOT, writePortableKeyFile, type Build } from './builds.js';
import { coapOnce, DEDUP_CACHE_BYTES, heartbeatDatagram, IN_FLIGHT, MEASURE_MS, ROUNDS, sha256, WARMUP_MS, writeCoapServerConfig, writeTrackBinaries } from './coap.js';
import { coapLoad } from './coap-load.js';
import { cpuPlan, pinThisProcess } from './pinning.js';
import { median, type SuiteRecord } from './report.js';
import { roundOrder, roundRatioRow } from './rounds.js';

// `npm run bench -- coap --against [name=]/other/checkout`: CoAP heartbeats per second of
// several server builds in one run, against the bare node-coap server of this checkout
// (bench/coap-bare-server.ts) answering the bytes this build answered. Every build is an
// `updater serve` process of its own checkout on the server cores, same configuration apart
// from ports and store; the closed-loop load (coap-load.ts) runs in this process on the load
// cores. Each round measures bare and every build, the order reversed every other round.

interface Side {
  readonly name: string;
  readonly pid: number;
  readonly port: number;
  readonly rounds: { perSecond: number; cpuUsPerRequest: number; lost: number }[];
}

export async function runCoapAgainst(builds: readonly Build[]): Promise<SuiteRecord> {
  const dir = await mkdtemp(join(tmpdir(), 'updater-bench-coap-'));
  const unpin = pinThisProcess('load');
  const children: ChildProcess[] = [];
  try {
    const { v1, v2 } = await writeTrackBinaries(dir);
    await writePortableKeyFile(join(dir, 'signing.key'));
    // The load is the fleet's steady state: devices on the current target.
    const datagram = heartbeatDatagram(sha256(await readFile(v2)));
    const sides: Side[] = [];
    const warnings = new Map<string, () => string[]>();
    let manifest: Buffer | undefined;
    for (const build of builds) {
      const coapPort = await freePort();
      const config = await writeCoapServerConfig(dir, `updater-${build.name}.yaml`, { store: join(dir, `store-${build.name}`), httpPort: await freePort(), coapPort, v1, v2 });
      const child = await startBuildServer(build, config);
      children.push(child);
      warnings.set(build.name, collectWarnings(child));
      const answer = await coapOnce(coapPort, datagram);
      manifest ??= answer;
      console.log(`  ${build.name}: ${build.root} at ${build.commit}, pid ${child.pid}, answer ${answer.length} bytes${answer.equals(manifest) ? '' : ' (differs from this build\'s)'}`);
      sides.push({ name: build.name, pid: child.pid!, port: coapPort, rounds: [] });
    }
    const barePort = await freePort();
    const bare = await startNodeProcess(join(THIS_ROOT, 'dist', 'bench', 'coap-bare-server.js'), [String(barePort), manifest!.toString('hex'), String(DEDUP_CACHE_BYTES)], 'listening');
    children.push(bare);
    sides.unshift({ name: 'bare', pid: bare.pid!, port: barePort, rounds: [] });

    console.log(`  ${ROUNDS} rounds of ${MEASURE_MS / 1000} s per side (after ${WARMUP_MS / 1000} s warm-up each); ${cpuPlan().description}`);
    for (let r = 0; r < ROUNDS; r++) {
      for (const side of roundOrder(sides, r)) {
        const cpuBefore = processCpuSeconds(side.pid);
        const result = await coapLoad(side.port, datagram, IN_FLIGHT, WARMUP_MS, MEASURE_MS);
        // The CPU spans warm-up and window alike: per answered request over the whole load.
        const cpuUsPerRequest = ((processCpuSeconds(side.pid) - cpuBefore) * 1e6) / Math.max(1, result.perSecond * (WARMUP_MS + MEASURE_MS) / 1000);
        // An error answer is fast; counting it would flatter the server. (Only 2.05 is counted
        // in perSecond; a lost datagram costs its slot 2 s and is reported.)
        if (Object.keys(result.codes).some((code) => code !== '2.05')) throw new Error(`${side.name}: answers ${JSON.stringify(result.codes)}; the figure would be meaningless`);
        side.rounds.push({ perSecond: result.perSecond, cpuUsPerRequest, lost: result.lost });
        console.log(`  round ${r + 1} ${side.name.padEnd(10)} ${String(result.perSecond).padStart(7)} heartbeats/s  cpu ${cpuUsPerRequest.toFixed(1)} us/req`);
      }
    }
    const record = summarize(builds, sides);
    reportWarnings(warnings, record);
    return record;
  } finally {
    for (const child of children) await stopNodeProcess(child);
    unpin();
    await rm(dir, { recursive: true, force: true });
  }
}

function summarize(builds: readonly Build[], sides: readonly Side[]): SuiteRecord {
  const of = (name: string) => sides.find((s) => s.name === name)!.rounds;
  const rate = (name: string) => of(name).map((r) => Math.max(1, r.perSecond));
  const cpu = (name: string) => of(name).map((r) => r.cpuUsPerRequest);
  const record: SuiteRecord = { coap_in_flight: IN_FLIGHT, rounds: ROUNDS, seconds_per_run: MEASURE_MS / 1000, cpus: cpuPlan().description,
    builds: builds.map((b) => `${b.name}=${b.root}@${b.commit}`).join(' ') };
  for (const side of sides) {
    record[`${side.name}_heartbeats_per_s`] = Math.round(median(rate(side.name)));
    record[`${side.name}_cpu_us_per_req`] = Number(median(cpu(side.name)).toFixed(1));
    record[`${side.name}_lost`] = of(side.name).reduce((sum, r) => sum + r.lost, 0);
  }
  record.ratios = [
    ...comparisonRows('CoAP', 'heartbeats/s', builds, rate, { name: 'bare node-coap', values: rate('bare') }, { min: 0.8 }),
    ...builds.filter((b) => b.name !== 'this').map((b) => roundRatioRow(`CoAP CPU per request, ${b.name} / this`, cpu(b.name), cpu('this'),
      { note: 'server process CPU (all threads) per heartbeat; above 1: this build is cheaper' })),
  ];
  return record;
}
