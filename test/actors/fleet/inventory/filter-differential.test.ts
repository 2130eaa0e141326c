import t from 'tap';
import type { AttributesRecord, HeartbeatRecord } from '../../../../src/messages/fleet.js';
import * as q from '../../../../src/actors/fleet/inventory/queries.js';
import { storedFilter } from '../../../../src/actors/fleet/inventory/groups.js';
import { changeTags, countMatching, setTags, withTargeting, writeAttributes } from '../../../../src/actors/fleet/inventory/targeting.js';
import { parseAttributes, type Attributes } from '../../../../src/shared/targeting/attributes.js';
import { filterJson, matches, parseFilter, type DeviceFacts, type TargetFilter } from '../../../../src/shared/targeting/filter.js';
import { parseTagList } from '../../../../src/shared/targeting/names.js';
import { ENGINES, openTestDatabase } from '../../../helpers/databases.js';

// A filter is judged in two places that must agree (docs/rollouts.md, "Targeting"; docs/fleet.md,
// "Tags and groups"): by `matches` in memory, where a front-end decides a rollout's group step
// at a heartbeat, and by `filterCondition` in SQL, where the admin API counts and lists a
// group's members and changes tags by filter. Here a seeded generator makes devices with tricky
// tags, attributes (case, unicode, empty, number-like, SQL-like, quotes, %, _, \, U+0000,
// unpaired surrogates), tracks, hashes and last_seen around the durations' edges, stores them
// with the fleet's own store code, and compares, for many generated filters, the device ids
// each side selects on the same facts at the same `nowMs`. A failure prints the seed, the
// filter and the devices the sides disagree on; FILTER_DIFF_SEED=<n> runs another seed.
// After it, the smallest cases of the disagreements it found, each named.

const SEED = Number(process.env.FILTER_DIFF_SEED ?? 20_261_128);
const DEVICES = 240;
const FILTERS = 420;
/** Not a whole second: the seconds of last_seen and of the threshold both round down. */
const NOW = 1_800_000_000_500;
const H = (n: number) => n.toString(16).padStart(64, '0');
const hb = (deviceId: string, over: Partial<HeartbeatRecord> = {}): HeartbeatRecord => ({
  deviceId, versionHash: H(1), version: '1', artifact: 'app', hwArch: 'a', hwOs: 'o', hwFreeRam: 1, hwFreeDisk: 1, transport: 'http', receivedAtMs: NOW, ...over,
});

/** mulberry32: small, fast, and the same sequence for the same seed on every machine. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const KEYS = [
  'hw', 'HW', 'Hw', 'site', 'Site', 'tz', 'select', 'SELECT', 'drop', 'or', 'null', 'NULL', 'true', '0', '1', '01', '_', '-', '.', '..',
  'a_b', 'a-b', 'a.b', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'name', 'value', 'device_id', 'k'.repeat(64),
];
const TAGS = ['canary', 'Canary', 'CANARY', 'lab', 'Lab', 'night', 'a_b', 'a.b', 'a-b', '_', '-', '.', '0', '00', 'select', '__proto__', 'constructor', 'z'.repeat(64)];
const VALUES = [
  '', ' ', '  ', '\t', 'lab', 'Lab', 'LAB', ' lab', 'lab ', 'berlin', 'Berlin', 'münchen', 'MÜNCHEN', 'Mu\u0308nchen', 'é', 'e\u0301', 'ß', 'SS', 'ss', 'ı', 'I', 'i', 'İ',
  '0', '1', '01', '1.0', '1e3', '1000', '-0', '+1', '0x10', 'NaN', 'Infinity', 'null', 'NULL', 'true', 'false', 'undefined',
  '%', '_', 'a%', '%a%', 'a_c', 'abc', 'a\\', '\\', '\\\\', '\\%', 'a\\_c', "'", "''", "O'Brien", '"', '";--', "' or '1'='1", 'select', '*',
  '😀', '😀😀', '\uD83D', '\uDE00', '\uFFFD', 'a\0b', 'a\uFFFDb', '\0', 'x\0', '日本', '\u00A0', '\u200B', '\u2028', '\u2126', '\u03A9',
  'v'.repeat(128), '😀'.repeat(128), 'v'.repeat(127),
];
const ARTIFACTS = ['app', 'App', 'app/linux/arm64', 'app/linux/amd64', 'other.v2', ''];
const FILTER_ARTIFACTS = ['app', 'App', 'app/linux/arm64', 'app/linux/amd64', 'other.v2', 'nope', 'app/linux/riscv64'];
const HASHES = [1, 2, 3].map(H);
const FILTER_HASHES = [...HASHES, H(4)];
const S = 1000, M = 60 * S, HOUR = 60 * M, DAY = 24 * HOUR;
/** How long before NOW a device was last seen (negative: ahead of the server's clock). */
const AGES = [0, 1, 499, 500, 501, 999, 1000, 1001, 1500, -2000, 15 * M - 1, 15 * M, 15 * M + 1, 15 * M + 1000, HOUR, 24 * HOUR - 1000, 24 * HOUR - 1, 24 * HOUR,
  24 * HOUR + 1, 24 * HOUR + 500, 24 * HOUR + 501, 24 * HOUR + 1000, 7 * DAY - 1, 7 * DAY, 7 * DAY + 1, 30 * DAY, NOW - 1, NOW];
const DURATIONS = ['1ms', '0.5ms', '500ms', '501ms', '999ms', '1s', '1.5s', '1001ms', '15m', '15m1ms', '15m1s', '1h', '1h30m', '24h', '23h59m59s', '23h59m59s999ms',
  '24h1ms', '24h1s', '1d', '6d23h', '7d', '7d1ms', '30d', '99999999999999999999d', `1${'0'.repeat(400)}d`];

interface Device { id: string; facts: DeviceFacts; receivedAtMs: number }

/** Text an assertion can show: JSON, with every character outside printable ASCII as \\uXXXX. */
const show = (value: unknown) => JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

function makeDevices(next: () => number): Device[] {
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const devices: Device[] = [];
  for (let i = 0; i < DEVICES; i++) {
    // Ids with case, unicode, quotes and LIKE characters of their own (sorted by code point).
    const id = pick(['dev-', 'Dev-', 'dév-', "d'", 'd%_', 'd\\', '😀-']) + String(i).padStart(3, '0');
    const raw: Record<string, string> = {};
    const n = next() < 0.15 ? 0 : 1 + Math.floor(next() * 8);
    for (let k = 0; k < n; k++) raw[pick(KEYS)] = pick(VALUES);
    const tags = parseTagList(TAGS.filter(() => next() < 0.18), 'tags').slice(0, 6);
    const receivedAtMs = NOW - pick(AGES);
    devices.push({
      id, receivedAtMs,
      facts: { tags, attributes: parseAttributes(JSON.parse(JSON.stringify(raw))), artifact: pick(ARTIFACTS), versionHash: pick(HASHES), lastSeen: Math.floor(receivedAtMs / 1000) },
    });
  }
  return devices;
}

/** A value near `value`: another case, a space, U+0000 and U+FFFD swapped, half a surrogate pair. */
function nearMiss(value: string, next: () => number): string {
  switch (Math.floor(next() * 6)) {
    case 0: return value.toUpperCase();
    case 1: return value.toLowerCase();
    case 2: return `${value} `;
    case 3: return value.replaceAll('\0', '\uFFFD');
    case 4: return value.replaceAll('\uFFFD', '\0');
    default: return value.slice(0, -1);
  }
}

function makeFilters(next: () => number, devices: readonly Device[]): unknown[] {
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const some = <T>(list: readonly T[], most: number) => Array.from({ length: 1 + Math.floor(next() * most) }, () => pick(list));
  const fixed: unknown[] = [
    {}, { tags: [] }, { attributes: {} }, { tags: ['canary'] }, { tags: ['canary', 'lab'] }, { tags: ['__proto__'] }, { attributes: { hw: 'B' } },
    JSON.parse('{"attributes":{"__proto__":"lab"}}'), { attributes: { constructor: ['', 'lab'] } }, { attributes: { site: '' } }, { attributes: { site: '%' } },
    { attributes: { site: ['a\0b'] } }, { attributes: { site: ['a\uFFFDb'] } }, { attributes: { site: '\uD83D' } }, { attributes: { site: '\uFFFD' } },
    ...FILTER_ARTIFACTS.map((artifact) => ({ artifact })), ...FILTER_HASHES.map((version_hash) => ({ version_hash })),
    ...DURATIONS.map((seen_within) => ({ seen_within })),
  ];
  const filters = [...fixed];
  while (filters.length < FILTERS) {
    const f: Record<string, unknown> = {};
    const model = pick(devices).facts;
    if (next() < 0.35) f.tags = next() < 0.6 && model.tags.length > 0 ? model.tags.filter(() => next() < 0.6) : some(TAGS, 3);
    if (next() < 0.65) {
      const attributes: Record<string, string | string[]> = {};
      const own = Object.keys(model.attributes);
      for (let k = 1 + Math.floor(next() * 3); k > 0; k--) {
        const key = own.length > 0 && next() < 0.7 ? pick(own) : pick(KEYS);
        const values = some(VALUES, 4);
        const have = model.attributes[key];
        if (have !== undefined && next() < 0.7) values.push(next() < 0.6 ? have : nearMiss(have, next));
        attributes[key] = values.length === 1 || next() < 0.5 ? values : values[0]!;
      }
      // A key such as __proto__ must be an own property of the body, as JSON.parse makes it.
      f.attributes = JSON.parse(JSON.stringify(attributes));
    }
    if (next() < 0.25) f.artifact = next() < 0.7 && model.artifact ? model.artifact : pick(FILTER_ARTIFACTS);
    if (next() < 0.25) f.version_hash = pick(FILTER_HASHES);
    if (next() < 0.35) f.seen_within = pick(DURATIONS);
    filters.push(f);
  }
  return filters;
}

/** What the device carried and what the operator set, stored as the fleet actor stores them. */
async function store(db: Parameters<typeof q.writeBatch>[0], devices: readonly Device[], next: () => number): Promise<void> {
  // A first flush with other sets for some devices, so that the real ones replace stored rows.
  const earlier: AttributesRecord[] = devices.filter(() => next() < 0.5)
    .map((d) => ({ deviceId: d.id, attributes: parseAttributes({ site: 'old', [KEYS[Math.floor(next() * KEYS.length)]!]: VALUES[Math.floor(next() * VALUES.length)]! }) }));
  await q.writeBatch(db, devices.map((d) => hb(d.id, { artifact: d.facts.artifact ?? '', versionHash: d.facts.versionHash ?? H(1), receivedAtMs: d.receivedAtMs - 60_000 })), []);
  await writeAttributes(db, earlier);
  await q.writeBatch(db, devices.map((d) => hb(d.id, { artifact: d.facts.artifact ?? '', versionHash: d.facts.versionHash ?? H(1), receivedAtMs: d.receivedAtMs })), []);
  await writeAttributes(db, devices.map((d) => ({ deviceId: d.id, attributes: d.facts.attributes })));
  for (const d of devices) if (d.facts.tags.length > 0) await setTags(db, d.id, d.facts.tags);
}

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The ids the admin API selects for the filter: GET /admin/devices?group= (the filter stored
 * and parsed again), the group's count, and now and then the list walked in pages of 7 and
 * POST /admin/tags (a tag added to what matches, then removed).
 */
async function inSql(db: Parameters<typeof q.writeBatch>[0], parsed: TargetFilter, thorough: boolean): Promise<{ ids: string[]; count: number; walked?: string[]; tagged?: string[] }> {
  const asGroup = storedFilter(JSON.stringify(filterJson(parsed)));
  const ids = (await q.listDevices(db, { limit: 1000 }, asGroup, NOW)).devices.map((d) => d.device_id);
  const count = await countMatching(db, parsed, NOW);
  if (!thorough) return { ids, count };
  const walked: string[] = [];
  let after: string | undefined;
  do {
    const page = await q.listDevices(db, { limit: 7, ...(after === undefined ? {} : { after }) }, asGroup, NOW);
    walked.push(...page.devices.map((d) => d.device_id));
    after = page.nextAfter ?? undefined;
  } while (after !== undefined);
  await changeTags(db, { filter: parsed, add: ['probe'], remove: [] }, NOW);
  const tagged = (await db.selectFrom('device_tags').select('device_id').where('tag', '=', 'probe').execute()).map((r) => r.device_id);
  await db.deleteFrom('device_tags').where('tag', '=', 'probe').execute();
  return { ids, count, walked, tagged };
}

/** The ids a front-end admits: the group's filter as the targeting index carries it to a front-end thread. */
function inMemory(devices: readonly Device[], parsed: TargetFilter): string[] {
  const asIndexed = structuredClone(storedFilter(JSON.stringify(filterJson(parsed))));
  return devices.filter((d) => matches(asIndexed, d.facts, NOW)).map((d) => d.id);
}

t.test('names with %, \\, quotes or spaces are refused before they reach SQL or matches()', async (t) => {
  for (const bad of ['a%', 'a\\b', "a'b", 'a"b', 'a b', '', 'k'.repeat(65), 'é', 'a;b']) {
    t.throws(() => parseFilter({ attributes: { [bad]: 'x' } }), { code: 'INVALID_FIELD' }, `filter key ${show(bad)}`);
    t.throws(() => parseFilter({ tags: [bad] }), { code: 'INVALID_FIELD' }, `filter tag ${show(bad)}`);
    t.throws(() => parseAttributes({ [bad]: 'x' }), { code: 'INVALID_FIELD' }, `device key ${show(bad)}`);
  }
});

/**
 * The smallest case of a disagreement the generator found: one device that sent `attributes`,
 * stored as the fleet stores it; whether SQL selects it and whether matches() admits it, for
 * each filter, and the value as the API shows it.
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

    await t.test(`SQL selects exactly what matches() admits (seed ${SEED})`, async (t) => {
      const next = random(SEED);
      const devices = makeDevices(next);
      t.equal(new Set(devices.map((d) => d.id)).size, devices.length, 'device ids are distinct');
      await store(db, devices, next);
      const filters = makeFilters(next, devices);

      const started = process.cpuUsage();
      let disagreements = 0;
      let partial = 0;
      for (const [i, raw] of filters.entries()) {
        const parsed = parseFilter(raw);
        const js = inMemory(devices, parsed).sort(byCodeUnit);
        const sql = await inSql(db, parsed, i % 20 === 0);
        const got = [...sql.ids].sort(byCodeUnit);
        if (js.length > 0 && js.length < devices.length) partial++;
        const same = show(got) === show(js) && sql.count === js.length
          && (sql.walked === undefined || show([...sql.walked].sort(byCodeUnit)) === show(js)) && (sql.tagged === undefined || show(sql.tagged.sort(byCodeUnit)) === show(js));
        if (same) continue;
        disagreements++;
        if (disagreements > 5) continue;
        const facts = (list: string[]) => list.slice(0, 3).map((id) => ({ id, ...devices.find((d) => d.id === id)!.facts }));
        t.fail(`seed ${SEED}, filter #${i} ${show(raw)}: SQL lists ${got.length} (counts ${sql.count}${sql.walked ? `, pages ${sql.walked.length}, tags ${sql.tagged!.length}` : ''}), matches() admits ${js.length}`, {
          onlySql: show(facts(got.filter((id) => !js.includes(id)))), onlyJs: show(facts(js.filter((id) => !got.includes(id)))),
        });
      }
      const cpu = process.cpuUsage(started);
      t.equal(disagreements, 0, `${filters.length} filters over ${devices.length} devices: no disagreement`);
      t.ok(partial >= filters.length / 3, `${partial} of ${filters.length} filters select some devices but not all`);
      t.comment(`${engine}: ${filters.length} filters compared in ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms of this process's CPU`);
    });

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
