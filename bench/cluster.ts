import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { adminCall, eventually, trackOf } from '../test/helpers/admin.js';
import { startCluster, startNginx, type Owner } from '../test/helpers/cluster.js';
import { TEST_PG_URL } from '../test/helpers/databases.js';
import { firmware, nextVersion } from '../test/helpers/fixture.js';
import { heartbeatUntilSigned } from '../test/helpers/http.js';
import { formatNumber, median, type SuiteRecord } from './report.js';
import { positiveInt, roundOrder, roundRatioRow } from './rounds.js';
import { runWrk, writePostScript } from './wrk.js';

// Cluster mode (docs/scaling.md): heartbeats per second of one replica, and of two replicas
// behind Debian's nginx, over one PostgreSQL database and one shared store; and how many
// database transactions a heartbeat costs (the goal is none: replicas answer from memory).
//
//   wrk ──▶ replica A                          "one"
//   wrk ──▶ nginx ──▶ replica A, replica B     "two"
//
// The fleet inventory is off here, so what the database sees is only the replicas' own
// background (the resync every 5 s, the listener's ping every 2 s): the transactions counted
// during a heartbeat run, minus those of an idle window as long, divided by the heartbeats.

const SECONDS = positiveInt(process.env.BENCH_CLUSTER_SECONDS, 6);
const ROUNDS = positiveInt(process.env.BENCH_CLUSTER_ROUNDS, 2);
const CONNECTIONS = 64;
/** PostgreSQL publishes another session's counters when it is idle for 10 s at the latest. */
const STATS_SETTLE_MS = 11_500;

export async function runClusterBench(): Promise<SuiteRecord> {
  const teardowns: (() => Promise<void> | void)[] = [];
  const owner: Owner = { teardown: (fn) => void teardowns.push(fn) };
  const scripts = await mkdtemp(join(tmpdir(), 'updater-bench-cluster-'));
  try {
    const cluster = await startCluster(owner, 2, [], { fleet: { enabled: false } });
    const [a, b] = cluster.replicas as [typeof cluster.replicas[0], typeof cluster.replicas[0]];
    const v1 = await cluster.fixture.writeBinary('v1.bin', firmware(256 * 1024, 'bench-cluster-1'));
    const v2 = await cluster.fixture.writeBinary('v2.bin', nextVersion(firmware(256 * 1024, 'bench-cluster-1'), 'bench-cluster-2'));
    for (const [version, binary] of [['1', v1.path], ['2', v2.path]]) {
      const answer = await adminCall(a.url, 'POST', '/admin/artifacts', { name: 'app', version, binary });
      if (answer.status !== 200) throw new Error(`publish answered ${answer.status}`);
    }
    await eventually('v2 on both replicas', () => Promise.all([a, b].map((r) => trackOf(r.url, 'app'))), (ts) => ts.every((tr) => tr?.hash === v2.hash), 10_000);
    await Promise.all([a, b].map((r) => heartbeatUntilSigned(r.url, v1.hash, 'app')));
    const nginx = await startNginx(owner, cluster.fixture.dir, [a.port, b.port]);
    // A device that gets a signed delta: the heaviest answer of the decision table.
    const script = await writePostScript(scripts, 'heartbeat', JSON.stringify({
      device_id: 'bench-device-0001', version_hash: v1.hash, artifact: 'app', version: '1.0.0', timestamp: 1_763_700_000,
      hw_info: { arch: 'amd64', os: 'linux', free_ram: 268_435_456, free_disk: 1_073_741_824 },
    }));

    const targets = [
      { label: 'one replica', url: `${a.url}/heartbeat`, runs: [] as number[] },
      { label: 'two behind nginx', url: `${nginx.url}/heartbeat`, runs: [] as number[] },
    ];
    console.log(`  wrk -t1 -c${CONNECTIONS}, ${ROUNDS} rounds of ${SECONDS} s per target`);
    for (const target of targets) await runWrk({ url: target.url, script, threads: 1, connections: CONNECTIONS, seconds: 2 });
    for (let round = 0; round < ROUNDS; round++) {
      for (const target of roundOrder(targets, round)) {
        const result = await runWrk({ url: target.url, script, threads: 1, connections: CONNECTIONS, seconds: SECONDS });
        if (result.errors > 0) throw new Error(`${target.label}: ${result.errors} failed requests of ${result.requests}`);
        target.runs.push(result.requestsPerSecond);
        console.log(`  round ${round + 1} ${target.label.padEnd(17)} ${formatNumber(result.requestsPerSecond).padStart(8)} heartbeats/s  p99 ${result.latencyP99Ms.toFixed(2)} ms`);
      }
    }

    // Database transactions: an idle window, then a heartbeat run of the same length.
    const idle = await transactionsDuring(cluster.databaseName, () => sleep(SECONDS * 1000).then(() => 0));
    const busy = await transactionsDuring(cluster.databaseName, async () =>
      (await runWrk({ url: `${nginx.url}/heartbeat`, script, threads: 1, connections: CONNECTIONS, seconds: SECONDS })).requests);
    const perHeartbeat = Math.max(0, busy.transactions - idle.transactions) / busy.heartbeats;
    console.log(`  database transactions: ${idle.transactions} in ${SECONDS} s idle, ${busy.transactions} in ${SECONDS} s with ${busy.heartbeats} heartbeats`);

    const one = median(targets[0]!.runs);
    const two = median(targets[1]!.runs);
    return {
      connections: CONNECTIONS, seconds_per_run: SECONDS, rounds: ROUNDS,
      one_replica_heartbeats_per_s: Math.round(one),
      two_replicas_nginx_heartbeats_per_s: Math.round(two),
      db_transactions_idle_window: idle.transactions,
      db_transactions_heartbeat_window: busy.transactions,
      heartbeats_in_window: busy.heartbeats,
      db_round_trips_per_heartbeat: Number(perHeartbeat.toFixed(6)),
      ratios: [
        roundRatioRow('heartbeats/s, two replicas behind nginx / one replica', targets[1]!.runs, targets[0]!.runs,
          { note: `medians ${formatNumber(two, 0)} vs ${formatNumber(one, 0)}/s; on 2 shared cores nginx, wrk and both replicas compete` }),
        { name: 'database round trips per heartbeat (goal: none)', value: perHeartbeat, goal: { max: 0.001 }, note: `${busy.transactions} transactions with ${formatNumber(busy.heartbeats, 0)} heartbeats, ${idle.transactions} in an idle window as long` },
      ],
    };
  } finally {
    for (const fn of teardowns.reverse()) await fn();
    await rm(scripts, { recursive: true, force: true });
  }
}

/** Transactions PostgreSQL counted for the database while `run` ran (read once the counters settled). */
async function transactionsDuring(database: string, run: () => Promise<number>): Promise<{ transactions: number; heartbeats: number }> {
  const read = async () => {
    const client = new pg.Client({ connectionString: TEST_PG_URL });
    await client.connect();
    try {
      const row = (await client.query<{ n: string }>('select xact_commit + xact_rollback as n from pg_stat_database where datname = $1', [database])).rows[0];
      return Number(row?.n ?? 0);
    } finally {
      await client.end();
    }
  };
  await sleep(STATS_SETTLE_MS);
  const before = await read();
  const heartbeats = await run();
  await sleep(STATS_SETTLE_MS);
  // Our own reading sessions are on another database (TEST_PG_URL's), so they are not counted.
  return { transactions: (await read()) - before, heartbeats };
}
