import t, { type Test } from 'tap';
import type { HeartbeatRecord } from '../../../../src/messages/fleet.js';
import type pg from 'pg';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import { postgresFleetStore } from '../../../../src/actors/fleet/inventory/store-postgres.js';
import { TOUCH_SIZES } from '../../../../src/actors/fleet/inventory/store-sqlite.js';
import { driverOf } from '../../../../src/shared/database/connect.js';
import { ENGINES, openTestDatabase } from '../../../helpers/databases.js';

// The flush touches a device already on its version with set-based statements (SQLite: the
// devices sharing track, hash, version and hardware texts in multi-row statements of
// TOUCH_SIZES, the few left over one by one; PostgreSQL: unnest per 5,000). A statement that
// touched fewer devices than it holds is read back device by device. These flushes mix,
// inside one group and across the statements' borders, devices that are touched, new, moved
// to another hash, renamed under the same hash, or on other hardware texts, and check every
// row and every count against a model of what each flush must leave.

const H = (n: number) => n.toString(16).padStart(64, '0');
const NOW = 1_800_000_000_000;
const [LARGE, SMALL] = TOUCH_SIZES;
/** One group spanning a large statement, a small one and five left over. */
const GROUP = LARGE + SMALL + 5;

function hb(i: number, over: Partial<HeartbeatRecord> = {}): HeartbeatRecord {
  return { deviceId: `b-${String(i).padStart(4, '0')}`, versionHash: H(1), version: '1.0.0', artifact: 'bulk', hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 1_000 + i, hwFreeDisk: 2_000 + i, transport: 'http', receivedAtMs: NOW, ...over };
}

for (const engine of ENGINES) {
  t.test(engine, async (t) => {
    const db = await openTestDatabase(t, engine, 'updater-bulk-');
    const model = new Map<string, { r: HeartbeatRecord; firstSeen: number }>();
    const flush = async (rows: HeartbeatRecord[]) => {
      await q.writeBatch(db, rows, []);
      for (const r of rows) model.set(r.deviceId, { r, firstSeen: model.get(r.deviceId)?.firstSeen ?? Math.floor(r.receivedAtMs / 1000) });
    };
    const agrees = async (t: Test, what: string) => {
      const rows = await db.selectFrom('devices').selectAll().where('artifact', 'like', 'bulk%').orderBy('device_id').execute();
      t.equal(rows.length, model.size, `${what}: every device has one row`);
      let wrong = 0;
      for (const row of rows) {
        const m = model.get(row.device_id);
        const want = m && [m.r.artifact, m.r.versionHash, m.r.version, m.r.hwArch, m.r.hwOs, m.r.hwFreeRam, m.r.hwFreeDisk, m.r.transport, m.firstSeen, Math.floor(m.r.receivedAtMs / 1000)];
        const got = [row.artifact, row.version_hash, row.version, row.hw_arch, row.hw_os, Number(row.hw_free_ram), Number(row.hw_free_disk), row.transport, Number(row.first_seen), Number(row.last_seen)];
        if (JSON.stringify(want) !== JSON.stringify(got) && wrong++ < 3) t.fail(`${what}: ${row.device_id} is ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
      }
      t.equal(wrong, 0, `${what}: every row as the flushes left it`);
      const fresh = new Map<string, number>();
      for (const { r } of model.values()) fresh.set(`${r.artifact} ${r.versionHash}`, (fresh.get(`${r.artifact} ${r.versionHash}`) ?? 0) + 1);
      const kept = (await q.versionCounts(db)).filter((c) => c.artifact.startsWith('bulk') && c.devices > 0);
      t.same(new Map(kept.map((c) => [`${c.artifact} ${c.version_hash}`, c.devices])), fresh, `${what}: fleet_versions counts every device exactly`);
    };

    // A bystander the flushes never name: no statement may touch it.
    await flush([hb(9_999, { artifact: 'bulk-bystander', receivedAtMs: NOW - 3_600_000 })]);
    await flush(Array.from({ length: GROUP }, (_, i) => hb(i)));
    await agrees(t, 'first sightings');

    // A minute later, one group in the order of arrival: every eleventh new, every thirteenth
    // moved to another hash, every seventeenth renamed under the same hash, some on another OS,
    // architecture or transport text (so no statement of theirs binds those texts once), the
    // rest touched; placed in the large statement, in the small one and among those left over.
    const later = NOW + 60_000;
    const second = Array.from({ length: GROUP }, (_, i) => {
      if (i % 11 === 5) return hb(10_000 + i, { receivedAtMs: later });
      if (i % 13 === 6) return hb(i, { versionHash: H(2), version: '2.0.0', receivedAtMs: later });
      if (i % 17 === 7) return hb(i, { version: '1.0.0-renamed', receivedAtMs: later });
      if (i % 19 === 8) return hb(i, { hwOs: 'linux-rt', receivedAtMs: later });
      if (i % 23 === 9) return hb(i, { hwArch: 'riscv64', receivedAtMs: later });
      if (i % 29 === 10) return hb(i, { transport: 'coap', receivedAtMs: later });
      return hb(i, { hwFreeRam: 7, hwFreeDisk: 9 + i, receivedAtMs: later });
    });
    t.ok(second.slice(LARGE).some((r) => r.deviceId >= 'b-1'), 'a new device lands in a small statement too');
    await flush(second);
    await agrees(t, 'touched, new, moved and renamed in one group');

    // The devices whose touch missed are read back: a whole flush of moves, then of touches.
    await flush(second.map((r) => ({ ...r, versionHash: H(3), receivedAtMs: later + 60_000 })));
    await agrees(t, 'everyone moved');
    await flush(second.map((r) => ({ ...r, versionHash: H(3), hwFreeRam: 1, receivedAtMs: later + 120_000 })));
    await agrees(t, 'everyone touched again');

    // A statement binds the hardware and transport texts once only when all its devices share
    // them: one device differing in one text, in the large statement and in the small one.
    let minute = 3;
    for (const field of ['hwArch', 'hwOs', 'transport'] as const) {
      for (const odd of [LARGE - 1, LARGE + SMALL - 1]) {
        const at = NOW + minute++ * 60_000;
        const rows = Array.from({ length: LARGE + SMALL }, (_, i) => hb(i, { receivedAtMs: at }));
        rows[odd] = { ...rows[odd]!, [field]: field === 'transport' ? 'coap' : 'other' };
        await flush(rows);
      }
    }
    await agrees(t, 'one text differing in a statement');

    // More versions than the engines bind once per statement (PostgreSQL: the largest 8 of at
    // least 64 devices), each large enough to be one: the rest are touched all the same.
    const versions = Array.from({ length: 12 }, (_, v) => Array.from({ length: 70 }, (_, i) => hb(20_000 + v * 100 + i, { versionHash: H(100 + v), receivedAtMs: NOW + 600_000 })));
    await flush(versions.flat());
    await flush(versions.flat().map((r) => ({ ...r, hwFreeDisk: 1, receivedAtMs: r.receivedAtMs + 60_000 })));
    await agrees(t, 'twelve versions of 70 devices');
  });
}

// An attacker's devices each report a hash of their own: a statement per version would be a
// round trip per device, and the flush would fall behind the heartbeats it must write.
t.test('postgres: a flush of devices on thousands of versions takes a bounded number of statements', async (t) => {
  const db = await openTestDatabase(t, 'postgres', 'updater-bulk-');
  const driver = driverOf(db);
  if (driver.engine !== 'postgres') throw new Error('expected the PostgreSQL driver');
  let statements = 0;
  const counting = {
    connect: async () => {
      const client = await driver.pool.connect();
      return Object.assign(Object.create(client) as pg.PoolClient, {
        query: (...args: Parameters<pg.PoolClient['query']>) => {
          statements++;
          return (client.query as (...a: unknown[]) => unknown)(...args);
        },
        release: (err?: Error | boolean) => client.release(err),
      });
    },
  } as unknown as pg.Pool;
  const store = postgresFleetStore(counting);
  const invented = (at: number) => Array.from({ length: 3_000 }, (_, i) => hb(30_000 + i, { versionHash: H(1_000 + i), receivedAtMs: at }));
  await store.writeBatch(invented(NOW), []);
  const first = statements;
  statements = 0;
  await store.writeBatch(invented(NOW + 60_000), []);
  t.ok(first <= 10, `the first sightings took ${first} statements`);
  t.ok(statements <= 4, `their touches took ${statements} statements`);
  const row = await db.selectFrom('devices').select(['last_seen']).where('device_id', '=', 'b-32999').executeTakeFirstOrThrow();
  t.equal(Number(row.last_seen), (NOW + 60_000) / 1000, 'and were written');
});
