import t from 'tap';
import { parseAttributes } from '../../../src/shared/targeting/attributes.js';
import { filterJson, matches, parseFilter, type DeviceFacts } from '../../../src/shared/targeting/filter.js';

// Filters: parsed at the boundary (INVALID_FIELD naming the field) and judged in memory.

const HASH = 'a'.repeat(64);
const NOW = 1_800_000_000_000;
const device = (over: Partial<DeviceFacts> = {}): DeviceFacts => ({
  tags: ['canary', 'lab'], attributes: parseAttributes({ hw: 'B', site: 'berlin' }), artifact: 'app/linux/arm64', versionHash: HASH, lastSeen: NOW / 1000 - 60, ...over,
});

t.test('{} matches every device', async (t) => {
  t.same(parseFilter({}), {});
  t.ok(matches(parseFilter({}), device({ tags: [], attributes: parseAttributes({}), artifact: null, versionHash: null, lastSeen: 0 }), NOW));
});

t.test('every condition given must hold', async (t) => {
  const f = (value: unknown) => parseFilter(value);
  t.ok(matches(f({ tags: ['canary'] }), device(), NOW));
  t.ok(matches(f({ tags: ['lab', 'canary'] }), device(), NOW), 'all of the tags');
  t.notOk(matches(f({ tags: ['canary', 'night'] }), device(), NOW), 'one tag missing');
  t.ok(matches(f({ attributes: { hw: 'B' } }), device(), NOW));
  t.notOk(matches(f({ attributes: { hw: 'A' } }), device(), NOW));
  t.ok(matches(f({ attributes: { hw: ['A', 'B'] } }), device(), NOW), 'one of a list');
  t.notOk(matches(f({ attributes: { tz: 'UTC' } }), device(), NOW), 'an attribute the device does not have');
  t.notOk(matches(f({ attributes: { constructor: 'x' } }), device(), NOW), 'an inherited property is not an attribute');
  t.ok(matches(f({ artifact: 'app/linux/arm64' }), device(), NOW));
  t.notOk(matches(f({ artifact: 'app' }), device(), NOW));
  t.ok(matches(f({ version_hash: HASH }), device(), NOW));
  t.notOk(matches(f({ version_hash: 'b'.repeat(64) }), device(), NOW));
  t.ok(matches(f({ seen_within: '1m' }), device(), NOW), 'seen exactly 60 s ago');
  t.notOk(matches(f({ seen_within: '59s' }), device(), NOW));
  t.notOk(matches(f({ tags: ['canary'], attributes: { hw: 'A' } }), device(), NOW), 'both must hold');
});

t.test('the filter round-trips as the API shows it', async (t) => {
  const wire = { tags: ['lab', 'canary', 'lab'], attributes: { site: 'berlin', hw: ['A', 'B'] }, artifact: 'app', version_hash: HASH, seen_within: '24h' };
  const parsed = parseFilter(wire);
  t.same(filterJson(parsed), { tags: ['canary', 'lab'], attributes: { hw: ['A', 'B'], site: 'berlin' }, artifact: 'app', version_hash: HASH, seen_within: '24h' });
  t.same(filterJson(parseFilter(filterJson(parsed))), filterJson(parsed), 'stable');
  t.same(structuredClone(parsed), parsed, 'plain data that crosses threads');
});

t.test('bad filters are refused naming the field', async (t) => {
  const cases: [unknown, string][] = [
    [null, 'filter'], [[], 'filter'], ['x', 'filter'],
    [{ colour: 'red' }, 'filter.colour'],
    [{ tags: 'canary' }, 'filter.tags'],
    [{ tags: ['x'.repeat(65)] }, 'filter.tags[0]'],
    [{ attributes: [] }, 'filter.attributes'],
    [{ attributes: { 'a b': 'x' } }, 'filter.attributes.a b'],
    [{ attributes: { hw: 1 } }, 'filter.attributes.hw'],
    [{ attributes: { hw: [] } }, 'filter.attributes.hw'],
    [{ attributes: { hw: 'x'.repeat(129) } }, 'filter.attributes.hw'],
    [{ artifact: 'a b' }, 'filter.artifact'],
    [{ artifact: 3 }, 'filter.artifact'],
    [{ version_hash: 'A'.repeat(64) }, 'filter.version_hash'],
    [{ seen_within: 'yesterday' }, 'filter.seen_within'],
    [{ seen_within: '0s' }, 'filter.seen_within'],
  ];
  for (const [value, field] of cases) t.throws(() => parseFilter(value), { code: 'INVALID_FIELD', details: { field } }, JSON.stringify(value));
});
