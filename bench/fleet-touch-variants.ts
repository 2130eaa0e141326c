import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type BetterSqlite3 from 'better-sqlite3';
import { sqliteFleetStore } from '../src/actors/fleet/inventory/store-sqlite.js';
import { writeBatch } from '../src/actors/fleet/inventory/store-of.js';
import type { HeartbeatRecord } from '../src/messages/fleet.js';
import { driverOf, openDatabase } from '../src/shared/database/connect.js';

// The steady-state touch on SQLite written in several ways, measured on the same file in
// turn (issue 38): which costs the fleet thread least per device.
//   node dist/bench/fleet-touch-variants.js [passes]
// BENCH_TOUCH_OS_EVERY=n gives the devices n different hardware OS texts (in turn): with n in
// the thousands, every group of the grouped touch is a handful of devices, its worst case.

const DEVICES = 100_000;
const FLUSH = 25_000;
const HASH = 'a'.repeat(64);
const OS_EVERY = Number(process.env.BENCH_TOUCH_OS_EVERY ?? 1);

const threadNs = () => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]);
const rows = (pass: number): HeartbeatRecord[] => Array.from({ length: DEVICES }, (_, i) => ({
  deviceId: `device-${String(i).padStart(7, '0')}`, versionHash: HASH, version: '1.0.0', artifact: 'app', hwArch: 'arm64', hwOs: OS_EVERY > 1 ? `linux-${i % OS_EVERY}` : 'linux',
  hwFreeRam: 1 << 28, hwFreeDisk: (1 << 30) + pass, transport: 'http', receivedAtMs: Date.now() + pass * 3000 + i,
}));
const seconds = (ms: number) => Math.floor(ms / 1000);

type Touch = ((chunk: readonly HeartbeatRecord[]) => number) & {
  /** Counts the devices whose last_seen is before `?`, where this variant keeps last_seen (devices by default). */
  readonly staleQuery?: string;
};
type Variant = (file: BetterSqlite3.Database) => Touch;

/** Each device's rowid, read once: what a device memory that kept the row would know. */
function rowsById(file: BetterSqlite3.Database): Map<string, number> {
  const all = file.prepare('select rowid as row, device_id as id from devices').all() as { row: number; id: string }[];
  return new Map(all.map((r) => [r.id, r.row]));
}

/**
 * A multi-row touch of up to 256 devices of one version whose rows are known; `update` names
 * the table and how a row is matched (`u.column1` is the row, `u.column2` the device id).
 */
function byRow(file: BetterSqlite3.Database, update: string): Touch {
  const CHUNK = 256;
  const statements = new Map<number, BetterSqlite3.Statement>();
  const statement = (n: number) => {
    let s = statements.get(n);
    if (!s) statements.set(n, (s = file.prepare(update.replace('$VALUES', Array<string>(n).fill('(?, ?, ?, ?, ?)').join(', ')))));
    return s;
  };
  const row = rowsById(file);
  return (chunk) => {
    let changed = 0;
    for (let i = 0; i < chunk.length; i += CHUNK) {
      const n = Math.min(CHUNK, chunk.length - i);
      const args: unknown[] = new Array(n * 5);
      for (let k = 0; k < n; k++) {
        const r = chunk[i + k]!;
        const a = k * 5;
        args[a] = row.get(r.deviceId); args[a + 1] = r.deviceId; args[a + 2] = seconds(r.receivedAtMs); args[a + 3] = r.hwFreeRam; args[a + 4] = r.hwFreeDisk;
      }
      const first = chunk[i]!;
      changed += statement(n).run(...args, { artifact: first.artifact, hash: first.versionHash, version: first.version, arch: first.hwArch, os: first.hwOs, transport: first.transport }).changes;
    }
    return changed;
  };
}

/** The touch before issue 38: one prepared statement per device, all ten values bound each time. */
const PER_ROW = `update devices set last_seen = ?, hw_arch = ?, hw_os = ?, hw_free_ram = ?, hw_free_disk = ?, transport = ?
  where device_id = ? and artifact = ? and version_hash = ? and version = ?`;
const SET = `last_seen = u.last_seen, hw_arch = u.hw_arch, hw_os = u.hw_os, hw_free_ram = u.hw_free_ram, hw_free_disk = u.hw_free_disk, transport = u.transport`;
const MATCH = `devices.device_id = u.device_id and devices.artifact = u.artifact and devices.version_hash = u.version_hash and devices.version = u.version`;

const variants: Record<string, Variant> = {
  'per row, prepared (before)': (file) => {
    const touch = file.prepare(PER_ROW);
    return (chunk) => {
      let changed = 0;
      for (const r of chunk) changed += touch.run(seconds(r.receivedAtMs), r.hwArch, r.hwOs, r.hwFreeRam, r.hwFreeDisk, r.transport, r.deviceId, r.artifact, r.versionHash, r.version).changes;
      return changed;
    };
  },
  'json_each, one statement': (file) => {
    const touch = file.prepare(`update devices set ${SET}
      from (select value->>0 as device_id, value->>1 as artifact, value->>2 as version_hash, value->>3 as version, value->>4 as hw_arch,
        value->>5 as hw_os, value->>6 as hw_free_ram, value->>7 as hw_free_disk, value->>8 as transport, value->>9 as last_seen from json_each(?)) as u
      where ${MATCH}`);
    return (chunk) => touch.run(JSON.stringify(chunk.map((r) => [r.deviceId, r.artifact, r.versionHash, r.version, r.hwArch, r.hwOs, r.hwFreeRam, r.hwFreeDisk, r.transport, seconds(r.receivedAtMs)]))).changes;
  },
  'VALUES, 200 rows a statement': (file) => {
    const N = 200;
    const values = Array.from({ length: N }, () => '(?,?,?,?,?,?,?,?,?,?)').join(',');
    const touch = file.prepare(`update devices set ${SET}
      from (select column1 as device_id, column2 as artifact, column3 as version_hash, column4 as version, column5 as hw_arch, column6 as hw_os,
        column7 as hw_free_ram, column8 as hw_free_disk, column9 as transport, column10 as last_seen from (values ${values})) as u where ${MATCH}`);
    const one = file.prepare(PER_ROW);
    const args: unknown[] = new Array(N * 10);
    return (chunk) => {
      let changed = 0;
      let i = 0;
      for (; i + N <= chunk.length; i += N) {
        for (let k = 0; k < N; k++) {
          const r = chunk[i + k]!;
          const a = k * 10;
          args[a] = r.deviceId; args[a + 1] = r.artifact; args[a + 2] = r.versionHash; args[a + 3] = r.version; args[a + 4] = r.hwArch;
          args[a + 5] = r.hwOs; args[a + 6] = r.hwFreeRam; args[a + 7] = r.hwFreeDisk; args[a + 8] = r.transport; args[a + 9] = seconds(r.receivedAtMs);
        }
        changed += touch.run(...args).changes;
      }
      for (; i < chunk.length; i++) {
        const r = chunk[i]!;
        changed += one.run(seconds(r.receivedAtMs), r.hwArch, r.hwOs, r.hwFreeRam, r.hwFreeDisk, r.transport, r.deviceId, r.artifact, r.versionHash, r.version).changes;
      }
      return changed;
    };
  },
  'grouped, VALUES of 256 and 16 (store-sqlite.ts)': (file) => {
    const store = sqliteFleetStore(file);
    // Its own transaction runs synchronously inside, as a savepoint of the one around it.
    return (chunk) => {
      void store.writeBatch(chunk, []);
      return chunk.length; // checked below by last_seen
    };
  },
  // The row found by its integer key instead of the device id's index: the wide row is still rewritten.
  'by rowid, same wide row': (file) => byRow(file, `update devices set last_seen = u.column3, hw_free_ram = u.column4, hw_free_disk = u.column5,
    hw_arch = $arch, hw_os = $os, transport = $transport from (values $VALUES) as u
    where devices.rowid = u.column1 and devices.device_id = u.column2 and +devices.artifact = $artifact and +devices.version_hash = $hash and +devices.version = $version`),
  // What a heartbeat changes kept in a narrow table of its own, keyed by the device's row: the
  // wide row is only read, to check the device and its version as the touch above does.
  'narrow table by row, wide row only read': (file) => {
    file.exec(`create table if not exists touch_seen (row integer primary key, last_seen integer not null, hw_arch text not null, hw_os text not null,
      hw_free_ram integer not null, hw_free_disk integer not null, transport text not null);
      insert or ignore into touch_seen select rowid, last_seen, hw_arch, hw_os, hw_free_ram, hw_free_disk, transport from devices`);
    const touch = byRow(file, `update touch_seen set last_seen = u.column3, hw_free_ram = u.column4, hw_free_disk = u.column5,
      hw_arch = $arch, hw_os = $os, transport = $transport from (values $VALUES) as u join devices as d on d.rowid = u.column1
      where touch_seen.row = u.column1 and d.device_id = u.column2 and d.artifact = $artifact and d.version_hash = $hash and d.version = $version`);
    return Object.assign(touch, { staleQuery: 'select count(*) as n from touch_seen where last_seen < ?' });
  },
  // The same, the device and its version trusted to the memory that knows the row: the wide row is not read.
  'narrow table by row alone': (file) => {
    file.exec(`create table if not exists touch_alone (row integer primary key, last_seen integer not null, hw_arch text not null, hw_os text not null,
      hw_free_ram integer not null, hw_free_disk integer not null, transport text not null);
      insert or ignore into touch_alone select rowid, last_seen, hw_arch, hw_os, hw_free_ram, hw_free_disk, transport from devices`);
    const touch = byRow(file, `update touch_alone set last_seen = u.column3, hw_free_ram = u.column4, hw_free_disk = u.column5,
      hw_arch = $arch, hw_os = $os, transport = $transport from (values $VALUES) as u
      where touch_alone.row = u.column1`);
    return Object.assign(touch, { staleQuery: 'select count(*) as n from touch_alone where last_seen < ?' });
  },
  'temp table, then one update from it': (file) => {
    file.exec(`create temp table if not exists touch_rows (device_id text, artifact text, version_hash text, version text, hw_arch text, hw_os text,
      hw_free_ram integer, hw_free_disk integer, transport text, last_seen integer)`);
    const fill = file.prepare('insert into temp.touch_rows values (?,?,?,?,?,?,?,?,?,?)');
    const touch = file.prepare(`update devices set ${SET} from temp.touch_rows as u where ${MATCH}`);
    const clear = file.prepare('delete from temp.touch_rows');
    return (chunk) => {
      for (const r of chunk) fill.run(r.deviceId, r.artifact, r.versionHash, r.version, r.hwArch, r.hwOs, r.hwFreeRam, r.hwFreeDisk, r.transport, seconds(r.receivedAtMs));
      const changed = touch.run().changes;
      clear.run();
      return changed;
    };
  },
};

export async function main(passes: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'updater-fleet-touch-'));
  const { db, close } = await openDatabase(join(dir, 'fleet.db'));
  try {
    await writeBatch(db, rows(0), []);
    const driver = driverOf(db);
    if (driver.engine !== 'sqlite') throw new Error('sqlite only');
    const file = driver.file;
    const made = Object.entries(variants).map(([name, make]) => ({ name, touch: make(file), us: [] as number[] }));
    for (let pass = 1; pass <= passes; pass++) {
      const order = pass % 2 === 0 ? [...made].reverse() : made;
      for (const v of order) {
        const all = rows(pass * 10 + made.indexOf(v));
        const t = threadNs();
        let changed = 0;
        for (let i = 0; i < all.length; i += FLUSH) changed += file.transaction(() => v.touch(all.slice(i, i + FLUSH)))();
        v.us.push((threadNs() - t) / DEVICES / 1000);
        if (changed !== DEVICES) throw new Error(`${v.name} touched ${changed} of ${DEVICES}`);
        const stale = file.prepare(v.touch.staleQuery ?? 'select count(*) as n from devices where last_seen < ?').get(seconds(all[0]!.receivedAtMs)) as { n: number };
        if (stale.n !== 0) throw new Error(`${v.name} left last_seen behind`);
      }
    }
    for (const v of made) console.log(`${v.name.padEnd(40)} µs a device: ${v.us.map((u) => u.toFixed(2)).join(' ')}`);
  } finally {
    await close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(Number(process.argv[2] ?? 4)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
