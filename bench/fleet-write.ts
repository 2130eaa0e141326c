import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WriteBuffer } from '../src/actors/fleet/inventory/write-buffer.js';
import { writeBatch } from '../src/actors/fleet/inventory/store-of.js';
import { HeartbeatPacker, unpackHeartbeats } from '../src/messages/fleet-batch.js';
import type { PackedHeartbeats } from '../src/messages/fleet.js';
import { driverOf, openDatabase } from '../src/shared/database/connect.js';
import type { Engine } from '../src/shared/database/schema.js';
import { createTestDatabase } from '../test/helpers/databases.js';
import { postgresCpuSeconds, postmasterOf } from './postgres-cpu.js';

// The fleet thread's work per heartbeat measured alone, stage by stage, on one thread and an
// SQLite file (issue 38): a fleet of DEVICES checking in in turn, front-end batches of BATCH
// heartbeats, a flush every FLUSH heartbeats, as the inventory does at about 20,000 to 40,000
// heartbeats a second. CPU time is this thread's own (/proc/thread-self/schedstat), so the
// collector's helper threads are not in it; the GC pauses on this thread are.
//   node dist/bench/fleet-write.js [passes]
// BENCH_FLEET_WRITE_ENGINE=postgres writes to a database of its own on the tests' server
// (UPDATER_TEST_PG, test/helpers/databases.ts) and also reports the server's CPU (its
// processes on this machine, from /proc): there the database's work is not the fleet thread's.

const DEVICES = Number(process.env.BENCH_FLEET_WRITE_DEVICES ?? 100_000);
const BATCH = 1_000;
const FLUSH = 25_000;
const HASH = 'a'.repeat(64);
const ENGINE = (process.env.BENCH_FLEET_WRITE_ENGINE ?? 'sqlite') as Engine;

function threadNs(): number {
  return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]);
}

/** The front-ends' packed batches of one pass over the fleet (made beforehand: not the fleet thread's work). */
function batches(pass: number): PackedHeartbeats[] {
  const out: PackedHeartbeats[] = [];
  const packer = new HeartbeatPacker(BATCH);
  const at = Date.now() + pass * 3_000;
  for (let i = 0; i < DEVICES; i++) {
    packer.add({ deviceId: `device-${String(i).padStart(7, '0')}`, versionHash: HASH, version: '1.0.0', artifact: 'app', hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 1 << 28, hwFreeDisk: (1 << 30) + pass, timestamp: 0 }, 'http', at + i / 40);
    if (packer.count === BATCH) out.push(packer.take());
  }
  if (packer.count > 0) out.push(packer.take());
  return out;
}

export async function main(passes: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'updater-fleet-write-'));
  const database = await createTestDatabase(ENGINE, dir);
  const { db, close } = await openDatabase(database.location);
  let postmaster: string | undefined;
  try {
    const driver = driverOf(db);
    if (driver.engine === 'postgres') postmaster = await postmasterOf(driver.pool);
    const checkpoint = process.env.BENCH_FLEET_WRITE_CHECKPOINT;
    if (checkpoint) {
      const driver = driverOf(db);
      if (driver.engine === 'sqlite') driver.file.pragma(`wal_autocheckpoint = ${Number(checkpoint)}`);
    }
    const buffer = new WriteBuffer(64 * 1024 * 1024);
    for (let pass = 0; pass < passes; pass++) {
      const input = batches(pass);
      const ns = { clone: 0, buffer: 0, take: 0, write: 0, written: 0 };
      const serverBefore = postmaster ? postgresCpuSeconds(postmaster) : 0;
      let pending = 0;
      const flush = async () => {
        let t = threadNs();
        const taken = buffer.take();
        ns.take += threadNs() - t;
        t = threadNs();
        await writeBatch(db, taken.heartbeats, taken.reports);
        ns.write += threadNs() - t;
        t = threadNs();
        buffer.written(taken);
        ns.written += threadNs() - t;
      };
      for (const packed of input) {
        let t = threadNs();
        const arrived = structuredClone(packed); // what postMessage costs the receiving side, and the sender's too
        ns.clone += threadNs() - t;
        t = threadNs();
        unpackHeartbeats(arrived, (h) => buffer.addHeartbeat(h));
        ns.buffer += threadNs() - t;
        pending += arrived.count;
        if (pending >= FLUSH) {
          await flush();
          pending = 0;
        }
      }
      await flush();
      const per = (v: number) => (v / DEVICES / 1000).toFixed(2);
      const fleet = ns.buffer + ns.take + ns.write + ns.written;
      const server = postmaster ? `; the PostgreSQL server ${(((postgresCpuSeconds(postmaster)) - serverBefore) / DEVICES * 1e6).toFixed(2)}` : '';
      console.log(`pass ${pass + 1}${pass === 0 ? ' (first sightings)' : ''}: µs a heartbeat: unpack+buffer ${per(ns.buffer)}, take ${per(ns.take)}, write ${per(ns.write)}, written ${per(ns.written)}; fleet side ${per(fleet)} (+ clone ${per(ns.clone)})${server}`);
    }
  } finally {
    await close();
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(Number(process.argv[2] ?? 6)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
