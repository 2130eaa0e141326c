import t from 'tap';
import type { HeartbeatRecord } from '../../../../src/messages/fleet.js';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import { withTargeting, writeAttributes } from '../../../../src/actors/fleet/inventory/targeting.js';
import { parseAttributes, type Attributes } from '../../../../src/shared/targeting/attributes.js';
import { matches, parseFilter, type DeviceFacts } from '../../../../src/shared/targeting/filter.js';
import { ENGINES, openTestDatabase } from '../../../helpers/databases.js';

// A filter is judged in two places that must agree (docs/rollouts.md, "Targeting"; docs/fleet.md,
// "Tags and groups"): by `matches` in memory, where a front-end decides a rollout's group step
// at a heartbeat, and by `filterCondition` in SQL, where the admin API counts and lists a
// group's members and changes tags by filter.

/** Not a whole second: the seconds of last_seen and of the threshold both round down. */
const NOW = 1_800_000_000_500;
const H = (n: number) => n.toString(16).padStart(64, '0');
const hb = (deviceId: string, over: Partial<HeartbeatRecord> = {}): HeartbeatRecord => ({
  deviceId, versionHash: H(1), version: '1', artifact: 'app', hwArch: 'a', hwOs: 'o', hwFreeRam: 1, hwFreeDisk: 1, transport: 'http', receivedAtMs: NOW, ...over,
});

/** Text an assertion can show: JSON, with every character outside printable ASCII as \\uXXXX. */
const show = (value: unknown) => JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/**
 * The smallest case of a disagreement: one device that sent `attributes`, stored as the fleet
 * stores it; whether SQL selects it and whether matches() admits it, for each filter, and the
 * value as the API shows it.
 */
async function oneDevice(db: Parameters<typeof q.writeBatch>[0], id: string, attributes: Attributes, filters: readonly unknown[]): Promise<{ sql: boolean[]; js: boolean[]; shown: Record<string, string> }> {
  await q.writeBatch(db, [hb(id)], []);
  await writeAttributes(db, [{ deviceId: id, attributes }]);
  const facts: DeviceFacts = { tags: [], attributes, artifact: 'app', versionHash: H(1), lastSeen: Math.floor(NOW / 1000) };
  const sql: boolean[] = [];
  const js: boolean[] = [];
  for (const raw of filters) {
    const filter = parseFilter(raw);
    sql.push((await q.listDevices(db, { limit: 1000 }, filter, NOW)).devices.some((d) => d.device_id === id));
    js.push(matches(filter, facts, NOW));
  }
  const [view] = await withTargeting(db, [(await q.deviceWithReports(db, id))!]);
  return { sql, js, shown: view!.attributes! };
}

for (const engine of ENGINES) {
  t.test(engine, async (t) => {
    const db = await openTestDatabase(t, engine, 'updater-fdiff-');

    await t.test('U+0000 and U+FFFD in an attribute value are one character to a filter, in SQL and in matches()', async (t) => {
      // docs/fleet.md: stored as U+FFFD, "and a filter's attribute values are compared so too".
      const got = await oneDevice(db, 'min-nul', parseAttributes({ site: 'a\0b' }), [{ attributes: { site: 'a\0b' } }, { attributes: { site: 'a\uFFFDb' } }]);
      t.same(got.shown, { site: 'a\uFFFDb' }, 'the API shows the value as stored');
      t.same(got.sql, [true, true], 'SQL: the value sent and the value shown both select the device');
      t.same(got.js, [true, true], 'matches(): the value sent and the value shown both admit the device');
    });

    await t.test('an unpaired surrogate in an attribute value is U+FFFD on both engines, in SQL and in matches()', async (t) => {
      // JSON carries one ("\\ud83d" alone); UTF-8 cannot: node-postgres sent U+FFFD, better-sqlite3 the surrogate's own bytes.
      const sent = parseAttributes(JSON.parse('{"site":"\\ud83d"}'));
      const got = await oneDevice(db, 'min-surrogate', sent, [{ attributes: { site: '\uD83D' } }, { attributes: { site: '\uFFFD' } }, { attributes: { site: '\uDE00' } }]);
      t.equal(show(got.shown), show({ site: '\uFFFD' }), 'the API shows the value as stored');
      t.same(got.sql, [true, true, true], 'SQL: the value sent, the value shown and another lone half select the device');
      t.same(got.js, [true, true, true], 'matches(): the same three admit the device');
      t.same(await writeAttributes(db, [{ deviceId: 'min-surrogate', attributes: sent }]), { written: 0 }, 'the same set again is not written again');
    });
  });
}
