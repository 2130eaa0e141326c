import t from 'tap';
import type { HeartbeatRecord, ReportRecord } from '../../../../src/messages/fleet.js';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import { countMatching, withTargeting, writeAttributes } from '../../../../src/actors/fleet/inventory/targeting.js';
import { parseAttributes } from '../../../../src/shared/targeting/attributes.js';
import { parseFilter } from '../../../../src/shared/targeting/filter.js';
import { validateHeartbeat, validateReport } from '../../../../src/shared/wire/validate.js';
import { ENGINES, openTestDatabase } from '../../../helpers/databases.js';

// A device's texts may hold U+0000: a heartbeat's version and hardware texts, a report's
// rollback reason and attribute values are checked for length only, and JSON and CBOR carry
// the character. PostgreSQL's text cannot hold it: one such record refused the whole flush,
// every flush after it (the records stay in the buffer for the next one), and so every other
// device's heartbeats and reports, until the buffer's budget dropped them. Both engines store
// the character as U+FFFD, and the other records of the flush are written.

const NOW = 1_800_000_000_000;
const H = (n: number) => n.toString(16).padStart(64, '0');
const hb = (deviceId: string, over: Partial<HeartbeatRecord> = {}): HeartbeatRecord => ({
  deviceId, versionHash: H(1), version: '1.0.0', artifact: 'app', hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 1, hwFreeDisk: 1, transport: 'http', receivedAtMs: NOW, ...over,
});
const rep = (deviceId: string, rollbackReason: string): ReportRecord => ({ deviceId, previousHash: H(1), newHash: H(2), success: false, rollbackReason, timestamp: 7, receivedAtMs: NOW });

t.test('the device boundary lets U+0000 through in these texts', async (t) => {
  const beat = validateHeartbeat(JSON.parse('{"device_id":"d","version_hash":"' + H(1) + '","version":"1.0\\u0000","timestamp":1,"hw_info":{"arch":"a\\u0000","os":"o\\u0000","free_ram":0,"free_disk":0},"attributes":{"site":"lab\\u0000"}}'));
  t.same([beat.version, beat.hwArch, beat.hwOs, beat.attributes?.site], ['1.0\0', 'a\0', 'o\0', 'lab\0']);
  t.equal(validateReport(JSON.parse('{"device_id":"d","previous_hash":"","new_hash":"' + H(2) + '","success":false,"rollback_reason":"x\\u0000","timestamp":1}')).rollbackReason, 'x\0');
});

for (const engine of ENGINES) {
  t.test(engine, async (t) => {
    const db = await openTestDatabase(t, engine, 'updater-nul-');
    await q.writeBatch(db, [hb('ok'), hb('odd', { version: '1.0\0', hwArch: 'arm\0', hwOs: '\0linux' })], [rep('ok', 'boot failed'), rep('odd', 'crashed\0at boot')]);
    const ok = await q.deviceWithReports(db, 'ok');
    t.match(ok, { version: '1.0.0', reports: [{ rollback_reason: 'boot failed' }] }, 'the other device of the flush is written');
    const odd = await q.deviceWithReports(db, 'odd');
    t.match(odd, { version: '1.0\uFFFD', hw_info: { arch: 'arm\uFFFD', os: '\uFFFDlinux' }, last_report: { rollback_reason: 'crashed\uFFFDat boot' }, reports: [{ rollback_reason: 'crashed\uFFFDat boot' }] });

    // The same heartbeat again is a touch: the device stays counted once, on its version.
    await q.writeBatch(db, [hb('odd', { version: '1.0\0', hwArch: 'arm\0', hwOs: '\0linux', receivedAtMs: NOW + 5_000 })], []);
    t.equal((await q.deviceWithReports(db, 'odd'))!.last_seen, NOW / 1000 + 5);
    t.same((await q.summary(db, 'app', NOW)).versions, [{ version_hash: H(1), version: '1.0\uFFFD', devices: 2 }]);

    t.same(await writeAttributes(db, [{ deviceId: 'ok', attributes: parseAttributes({ site: 'lab' }) }, { deviceId: 'odd', attributes: parseAttributes({ site: 'lab\0', tz: 'UTC' }) }]), { written: 2 });
    const views = await withTargeting(db, [(await q.deviceWithReports(db, 'ok'))!, (await q.deviceWithReports(db, 'odd'))!]);
    t.same(views.map((v) => v.attributes), [{ site: 'lab' }, { site: 'lab\uFFFD', tz: 'UTC' }], 'both sets are written, the odd one as stored');
    t.same(await writeAttributes(db, [{ deviceId: 'odd', attributes: parseAttributes({ site: 'lab\0', tz: 'UTC' }) }]), { written: 0 }, 'the same set again is not written again');
    t.equal(await countMatching(db, parseFilter({ attributes: { site: 'lab\0' } }), NOW), 1, 'a filter naming the value the device sends finds it');
  });
}

// JSON carries an unpaired surrogate ("\ud83d" alone), which UTF-8 cannot: node-postgres sent
// U+FFFD in its place, better-sqlite3 the surrogate's own three bytes, which the API then showed
// as three U+FFFD. The texts a device sends must read back alike on both engines.
for (const engine of ENGINES) {
  t.test(`${engine}: an unpaired surrogate in a device's texts reads back as one U+FFFD`, async (t) => {
    const db = await openTestDatabase(t, engine, 'updater-surrogate-');
    const lone = '\ud83d';
    await q.writeBatch(db, [hb('odd', { version: `2.0${lone}`, hwArch: `arm${lone}`, hwOs: `${lone}linux` })], [rep('odd', `crashed${lone}`)]);
    const odd = (await q.deviceWithReports(db, 'odd'))!;
    // Compared whole (t.match would take a text that merely contains the one expected).
    t.same([odd.version, odd.hw_info.arch, odd.hw_info.os, odd.last_report?.rollback_reason, odd.reports[0]?.rollback_reason],
      ['2.0\uFFFD', 'arm\uFFFD', '\uFFFDlinux', 'crashed\uFFFD', 'crashed\uFFFD'], 'version, hardware and rollback reason as stored');
    t.same((await q.summary(db, 'app', NOW)).versions, [{ version_hash: H(1), version: '2.0\uFFFD', devices: 1 }]);
    await q.writeBatch(db, [hb('odd', { version: `2.0${lone}`, hwArch: `arm${lone}`, hwOs: `${lone}linux`, receivedAtMs: NOW + 5_000 })], []);
    t.equal((await q.deviceWithReports(db, 'odd'))!.last_seen, NOW / 1000 + 5, 'the same heartbeat again is a touch');
    t.same((await q.summary(db, 'app', NOW)).versions, [{ version_hash: H(1), version: '2.0\uFFFD', devices: 1 }], 'and the device is counted once');
  });
}
