import t from 'tap';
import { attributesJson, MAX_ATTRIBUTES, parseAttributes } from '../../../src/shared/targeting/attributes.js';
import { isTargetName, parseTagList, parseTargetName } from '../../../src/shared/targeting/names.js';

// Names (tags, groups, attribute keys) and a device's attribute set: every refusal is
// INVALID_FIELD naming the field, and nothing a device sends can reach an object prototype.

const refusal = (field: string) => ({ code: 'INVALID_FIELD', details: { field } });

t.test('a name is 1 to 64 characters of [A-Za-z0-9_.-]', async (t) => {
  for (const good of ['a', 'canary', 'site.berlin', 'hw-rev_B', 'x'.repeat(64)]) t.ok(isTargetName(good), good);
  for (const bad of ['', 'x'.repeat(65), 'a b', 'ä', 'a/b', 'a:b', 'a\n', 7, null, ['a']]) t.notOk(isTargetName(bad), JSON.stringify(bad));
  t.throws(() => parseTargetName('x'.repeat(65), 'name'), refusal('name'), 'a 65-character name names the field');
  t.throws(() => parseTargetName('', 'rollout.steps[0].group', 'INVALID_ROLLOUT'), { code: 'INVALID_ROLLOUT', details: { field: 'rollout.steps[0].group' } });
});

t.test('a tag list is at most 16 names, sorted and without repeats', async (t) => {
  t.same(parseTagList(['b', 'a', 'b'], 'tags'), ['a', 'b']);
  t.same(parseTagList([], 'tags'), []);
  t.throws(() => parseTagList('canary', 'tags'), refusal('tags'));
  t.throws(() => parseTagList(Array.from({ length: 17 }, (_, i) => `t${i}`), 'tags'), refusal('tags'));
  t.throws(() => parseTagList(['ok', 'x'.repeat(65)], 'tags'), refusal('tags[1]'), 'the offending entry is named');
});

t.test('attributes: at most 32 name → text entries, values at most 128 characters', async (t) => {
  t.same(attributesJson(parseAttributes({ hw: 'B', site: 'berlin' })), { hw: 'B', site: 'berlin' });
  t.same(attributesJson(parseAttributes(new Map([['tz', 'Europe/Berlin']]))), { tz: 'Europe/Berlin' }, 'a CBOR map');
  t.same(attributesJson(parseAttributes({})), {});
  const full = Object.fromEntries(Array.from({ length: MAX_ATTRIBUTES }, (_, i) => [`k${i}`, 'v']));
  t.equal(Object.keys(parseAttributes(full)).length, 32);
  t.throws(() => parseAttributes({ ...full, k32: 'v' }), refusal('attributes'), '33 attributes');
  t.equal(parseAttributes({ a: 'é'.repeat(128) }).a!.length, 128, '128 characters that are not ASCII');
  t.throws(() => parseAttributes({ a: 'x'.repeat(129) }), refusal('attributes.a'));
  t.throws(() => parseAttributes({ a: 1 }), refusal('attributes.a'), 'a number is not text');
  t.throws(() => parseAttributes({ 'a b': 'x' }), refusal('attributes'), 'a key that is not a name');
  t.throws(() => parseAttributes(new Map([[7, 'x']])), refusal('attributes'), 'an integer key');
  for (const bad of [null, 'x', ['a'], 3]) t.throws(() => parseAttributes(bad), refusal('attributes'), JSON.stringify(bad));
});

t.test('attack: a device cannot pollute an object prototype through an attribute key', async (t) => {
  const sent = JSON.parse('{"__proto__":"x","constructor":"y","tz":"UTC"}') as unknown;
  const attributes = parseAttributes(sent);
  t.equal(Object.getPrototypeOf(attributes), null, 'the set is a null-prototype object');
  t.equal(attributes.__proto__, 'x', '"__proto__" is an ordinary entry');
  t.same(Object.keys(attributesJson(attributes)).sort(), ['__proto__', 'constructor', 'tz']);
  t.equal(JSON.stringify(attributesJson(attributes)), '{"__proto__":"x","constructor":"y","tz":"UTC"}', 'and it survives the JSON answer');
  t.equal(({} as Record<string, unknown>).x, undefined, 'no prototype was touched');
});
