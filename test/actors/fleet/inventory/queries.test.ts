import t, { type Test } from 'tap';
import type { HeartbeatRecord, ReportRecord } from '../../../../src/messages/fleet.js';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import { ENGINES, openTestDatabase } from '../../../helpers/databases.js';

const H = (n: number) => n.toString(16).padStart(64, '0');
const NOW = 1_800_000_000_000;

function hb(deviceId: string, over: Partial<HeartbeatRecord> = {}): HeartbeatRecord {
  return { deviceId, versionHash: H(1), version: '1.0.0', artifact: 'app/linux/arm64', hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 5_000_000_000, hwFreeDisk: 7, transport: 'http', receivedAtMs: NOW, ...over };
}
/** The rollout offers that make these devices' reports of `target` count (from H(1), as `rep` leaves). */
const offers = (target: string, ids: string[], from = H(1)) => ids.map((deviceId) => ({ deviceId, targetHash: target, fromHash: from, offeredAtMs: NOW }));

function rep(deviceId: string, success: boolean, over: Partial<ReportRecord> = {}): ReportRecord {
  return { deviceId, previousHash: H(1), newHash: H(2), success, rollbackReason: success ? '' : 'boot failed', timestamp: 123, receivedAtMs: NOW, ...over };
}

for (const engine of ENGINES) {
  t.test(engine, async (t) => {
    const db = await openTestDatabase(t, engine, 'updater-q-');

    /** fleet_versions must always equal a fresh count of the devices table. */
    const countsAgree = async (t: Test) => {
      const fresh = await db.selectFrom('devices').select((eb) => ['artifact', 'version_hash', eb.fn.countAll<number>().as('devices')])
        .groupBy(['artifact', 'version_hash']).execute();
      const key = (r: { artifact: string; version_hash: string; devices: number | string | bigint }) => `${r.artifact} ${r.version_hash} ${Number(r.devices)}`;
      t.same((await q.versionCounts(db)).map(key).sort(), fresh.map(key).sort(), 'the kept counts equal a fresh count');
    };

    await t.test('an upsert keeps first_seen and moves everything else', async (t) => {
      await q.writeBatch(db, [hb('dev-b'), hb('dev-a', { artifact: 'other' })], []);
      await q.writeBatch(db, [hb('dev-b', { versionHash: H(2), version: '1.1.0', transport: 'coap', receivedAtMs: NOW + 60_000 })], []);
      const b = (await q.deviceWithReports(db, 'dev-b'))!;
      t.same({ ...b }, {
        device_id: 'dev-b', artifact: 'app/linux/arm64', version_hash: H(2), version: '1.1.0',
        hw_info: { arch: 'arm64', os: 'linux', free_ram: 5_000_000_000, free_disk: 7 }, transport: 'coap',
        first_seen: NOW / 1000, last_seen: NOW / 1000 + 60, last_report: null, reports: [],
      });
      t.equal(await q.deviceWithReports(db, 'nobody'), null);
      await countsAgree(t);
      // Devices move between versions and tracks, within one flush and across flushes.
      await q.writeBatch(db, [hb('dev-a', { versionHash: H(3) }), hb('dev-c', { artifact: 'other' })], []);
      await q.writeBatch(db, [hb('dev-a', { versionHash: H(1), artifact: 'app/linux/arm64' }), hb('dev-c', { artifact: 'other', versionHash: H(3) })], []);
      await countsAgree(t);
      await q.writeBatch(db, [hb('dev-c', { artifact: 'third', versionHash: H(1) })], []);
      await q.writeBatch(db, [hb('dev-a', { artifact: 'other' })], []);
      await countsAgree(t);
      t.same((await q.summary(db, 'other', NOW)).versions, [{ version_hash: H(1), version: '1.0.0', devices: 1 }], 'a track left by every device lists none of them');
    });

    await t.test('pages follow device_id in code-point order with a cursor, and filters combine', async (t) => {
      // Mixed case and punctuation: both engines must sort them alike ('B' < '_' < 'a').
      const ids = ['p-a', 'p-B', 'p-_', 'p-0', 'p-~', 'p-aa'];
      await q.writeBatch(db, ids.map((id, i) => hb(id, { receivedAtMs: NOW - i * 3_600_000 })), []);
      const expected = [...ids].sort();
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await q.listDevices(db, { limit: 4, artifact: 'app/linux/arm64', ...(after ? { after } : {}) });
        seen.push(...page.devices.map((d) => d.device_id));
        if (!page.nextAfter) break;
        after = page.nextAfter;
      }
      t.same(seen.filter((id) => id.startsWith('p-')), expected);
      const recent = await q.listDevices(db, { limit: 100, seenSince: NOW / 1000 - 2 * 3600 });
      t.same(recent.devices.filter((d) => d.device_id.startsWith('p-')).map((d) => d.device_id), ['p-a', 'p-B', 'p-_'].sort());
      const byHash = await q.listDevices(db, { limit: 100, versionHash: H(2) });
      t.same(byHash.devices.map((d) => d.device_id), ['dev-b']);
      const exact = await q.listDevices(db, { limit: 1, artifact: 'other' });
      t.same(exact, { devices: [exact.devices[0]], nextAfter: null }, 'no next when the page holds the last one');
    });

    await t.test('reports: the device keeps its last one, the detail shows 50 newest first', async (t) => {
      const reports = Array.from({ length: 55 }, (_, i) => rep('dev-b', i % 2 === 0, { timestamp: i }));
      await q.writeBatch(db, [], reports.slice(0, 30));
      await q.writeBatch(db, [], reports.slice(30));
      const b = (await q.deviceWithReports(db, 'dev-b'))!;
      t.equal(b.reports.length, 50);
      t.same(b.reports.map((r) => r.timestamp).slice(0, 3), [54, 53, 52]);
      t.same(b.reports[0], { previous_hash: H(1), new_hash: H(2), success: true, rollback_reason: '', timestamp: 54, received_at: NOW / 1000 });
      t.same(b.last_report, { success: true, new_hash: H(2), rollback_reason: '', at: NOW / 1000 });
    });

    await t.test('the summary counts versions and the last day of reports of one track', async (t) => {
      const s = await q.summary(db, 'app/linux/arm64', NOW);
      t.equal(s.devices, 7);
      t.same(s.versions, [{ version_hash: H(1), version: '1.0.0', devices: 6 }, { version_hash: H(2), version: '1.1.0', devices: 1 }]);
      t.same(s.reports_24h, { success: 28, failure: 27 });
      t.same((await q.summary(db, 'nothing', NOW)).versions, []);
      t.same((await q.summary(db, 'app/linux/arm64', NOW + 2 * 86_400_000)).reports_24h, { success: 0, failure: 0 }, 'older than a day: not counted');
    });

    await t.test('rollout health counts the latest report per device since a moment', async (t) => {
      const T = H(7);
      const at = (s: number) => NOW + s * 1000;
      await q.writeBatch(db, [], [
        rep('h1', false, { newHash: T, receivedAtMs: at(0) }), rep('h1', true, { newHash: T, receivedAtMs: at(10) }),
        rep('h2', true, { newHash: T, receivedAtMs: at(5) }), rep('h2', false, { newHash: T, receivedAtMs: at(20) }),
        rep('h3', false, { newHash: T, receivedAtMs: at(1) }),
        rep('h4', true, { newHash: H(8), receivedAtMs: at(30) }),
      ]);
      await q.recordOffers(db, offers(T, ['h1', 'h2', 'h3', 'h4']));
      const [all, late, none] = await q.rolloutHealth(db, [{ targetHash: T, sinceMs: NOW }, { targetHash: T, sinceMs: NOW + 5000 }, { targetHash: H(99), sinceMs: 0 }]);
      t.same(all, { targetHash: T, success: 1, failure: 2 }, 'h1 recovered, h2 failed last, h3 failed');
      t.same(late, { targetHash: T, success: 1, failure: 1 }, 'since +5 s: h1 success at 10, h2 failure at 20');
      t.same(none, { targetHash: H(99), success: 0, failure: 0 });
    });

    await t.test('rollout health counts only devices offered the target from the version they report leaving', async (t) => {
      const T = H(10);
      await q.recordOffers(db, [...offers(T, ['o1', 'o2']), ...offers(H(11), ['o3']), ...offers(T, ['o4'], H(3))]);
      await q.writeBatch(db, [], [
        rep('o1', false, { newHash: T }), // offered T from H(1): counts
        rep('o2', true, { newHash: T }), // likewise
        rep('o3', false, { newHash: T }), // offered another target only
        rep('o4', false, { newHash: T }), // offered T from H(3), claims to leave H(1)
        rep('o5', false, { newHash: T }), // never offered anything
      ]);
      t.same(await q.rolloutHealth(db, [{ targetHash: T, sinceMs: NOW }]), [{ targetHash: T, success: 1, failure: 1 }]);
      // A later offer from another version replaces the earlier one of the same target.
      await q.recordOffers(db, offers(T, ['o1'], H(4)));
      t.same(await q.rolloutHealth(db, [{ targetHash: T, sinceMs: NOW }]), [{ targetHash: T, success: 1, failure: 0 }]);
    });

    await t.test('rollout health counts to the millisecond, within the second of the start', async (t) => {
      const T = H(9);
      // A rollout that started half way through a second.
      const start = NOW + 60_500;
      await q.recordOffers(db, offers(T, ['m1', 'm2', 'm3', 'm4', 'm5', 'm6']));
      await q.writeBatch(db, [], [
        rep('m1', false, { newHash: T, receivedAtMs: start - 100 }), // the same second, before: not counted
        rep('m2', false, { newHash: T, receivedAtMs: start }),
        rep('m3', false, { newHash: T, receivedAtMs: start + 1 }),
        rep('m4', true, { newHash: T, receivedAtMs: start + 499 }), // still the same second
      ]);
      t.same(await q.rolloutHealth(db, [{ targetHash: T, sinceMs: start }]), [{ targetHash: T, success: 1, failure: 2 }]);
      // Rows written before migration 0009 have whole seconds only: they count from the next second, as they did.
      const legacy = (id: string, s: number) => ({ device_id: id, previous_hash: H(1), new_hash: T, success: 0, rollback_reason: 'x', timestamp: 1, received_at: s, received_at_ms: null });
      await db.insertInto('reports').values([legacy('m5', Math.floor(start / 1000)), legacy('m6', Math.ceil(start / 1000))]).execute();
      t.same(await q.rolloutHealth(db, [{ targetHash: T, sinceMs: start }]), [{ targetHash: T, success: 1, failure: 3 }], 'm6, of the next second, counts; m5 cannot be placed and does not');
    });

    await t.test('retention deletes devices not seen and reports received before the limits', async (t) => {
      const removed = await q.prune(db, NOW / 1000 - 3 * 3600, NOW / 1000 + 15);
      t.same(removed, { devices: 2, reports: 55 + 4 + 5 }, 'p-~ and p-aa, seen 4 h and 5 h ago; the reports received before +15 s');
      t.same(await db.selectFrom('rollout_offers').select('device_id').execute(), [], 'and the offers made before +15 s, which no kept report can need');
      t.equal((await q.listDevices(db, { limit: 1000 })).devices.length, 7);
      t.same(await q.prune(db, undefined, undefined), { devices: 0, reports: 0 }, '0 keeps all');
      const counts = await q.versionCounts(db);
      t.same(counts.reduce((n, c) => n + c.devices, 0), 7);
      await countsAgree(t);
    });

    await t.test('the flush touches devices already on their version and upserts the rest, texts intact', async (t) => {
      const odd = ['quote " and \\ backslash', '{brace},comma', 'NULL', '', 'tab\there\nnewline\u0001', 'é€😀', '\\n not a newline'];
      const devices = odd.map((text, i) => hb(`w-${i}-${text}`, { version: text, hwArch: text, hwOs: odd[(i + 1) % odd.length]!, artifact: 'weird' }));
      await q.writeBatch(db, devices, odd.map((text, i) => rep(`w-${i}-${text}`, false, { rollbackReason: text })));
      // Again a minute later: the same versions (a touch), one version text changed under the same hash, one new.
      const later = devices.map((d) => ({ ...d, hwFreeRam: 1, transport: 'coap' as const, receivedAtMs: NOW + 60_000 }));
      later[0] = { ...later[0]!, version: 'renamed' };
      await q.writeBatch(db, [...later, hb('w-new', { artifact: 'weird', receivedAtMs: NOW + 60_000 })], []);
      for (const [i, d] of later.entries()) {
        const row = (await q.deviceWithReports(db, d.deviceId))!;
        t.same([row.version, row.hw_info.arch, row.hw_info.os, row.hw_info.free_ram, row.transport, row.first_seen, row.last_seen],
          [d.version, d.hwArch, d.hwOs, 1, 'coap', NOW / 1000, NOW / 1000 + 60], JSON.stringify(d.deviceId));
        t.equal(row.reports[0]!.rollback_reason, odd[i]);
      }
      t.equal((await q.summary(db, 'weird', NOW)).devices, odd.length + 1);
      await countsAgree(t);
    });

    await t.test('a device deleted by retention is written again by its next heartbeat, and counted', async (t) => {
      await q.writeBatch(db, [hb('gone', { artifact: 'ret', receivedAtMs: NOW - 10 * 86_400_000 })], []);
      await q.prune(db, NOW / 1000 - 86_400, undefined);
      t.equal(await q.deviceWithReports(db, 'gone'), null);
      await q.writeBatch(db, [hb('gone', { artifact: 'ret' })], []);
      t.equal((await q.deviceWithReports(db, 'gone'))!.first_seen, NOW / 1000);
      t.equal((await q.summary(db, 'ret', NOW)).devices, 1);
      await countsAgree(t);
    });

    await t.test('a flush larger than one statement writes every device and moves every count', async (t) => {
      const many = (n: number, hash: string) => Array.from({ length: n }, (_, i) => hb(`m-${String(i).padStart(5, '0')}`, { artifact: 'many', versionHash: hash }));
      await q.writeBatch(db, many(7_000, H(1)), []);
      // 12,000 in one flush: 7,000 move to H(2), 5,000 are new.
      await q.writeBatch(db, many(12_000, H(2)), []);
      t.same((await q.summary(db, 'many', NOW)).versions.map((v) => [v.version_hash, v.devices]), [[H(2), 12_000]]);
      await countsAgree(t);
    });
  });
}
