import t from 'tap';
import { TargetingFacts } from '../../../src/actors/front-ends/targeting-facts.js';
import { NO_ATTRIBUTES, parseAttributes, MAX_ATTRIBUTES, MAX_ATTRIBUTE_VALUE } from '../../../src/shared/targeting/attributes.js';

// The attributes a front-end remembers for devices whose heartbeats carry none are device
// input: what they hold must stay within fleet.targeting_index_mb (docs/memory.md) whatever
// the devices send, and the gauge must say what they hold.

const BUDGET = 1 << 20;

/** The largest attribute set a heartbeat may carry: 32 keys of 64 characters, values of 128, unique to the device. */
function largest(device: number) {
  return parseAttributes(Object.fromEntries(Array.from({ length: MAX_ATTRIBUTES }, (_, i) =>
    [`k${String(i).padStart(2, '0')}`.padEnd(64, 'x'), `${device}-${i}-`.padEnd(MAX_ATTRIBUTE_VALUE, 'v')])));
}

const remembered = (facts: TargetingFacts, ids: readonly string[]) => ids.filter((id) => facts.attributesOf(id, undefined) !== NO_ATTRIBUTES).length;

t.test('the largest attribute sets of many devices stay within the budget, and the gauge counts them', async (t) => {
  const facts = new TargetingFacts(BUDGET);
  const ids = Array.from({ length: 6000 }, (_, i) => `device-${i}`);
  ids.forEach((id, i) => facts.attributesOf(id, largest(i)));
  const kept = remembered(facts, ids);
  // At least one byte per character of the values alone (the keys come on top).
  const valueBytes = MAX_ATTRIBUTES * MAX_ATTRIBUTE_VALUE;
  t.ok(kept > 0, `${kept} devices remembered`);
  t.ok(kept * valueBytes <= BUDGET, `${kept} devices × ${valueBytes} bytes of values fit in the budget of ${BUDGET}`);
  t.ok(facts.bytes >= kept * valueBytes, `the gauge (${facts.bytes}) counts at least the values held`);
  t.ok(facts.bytes <= BUDGET, 'the gauge is within the budget');
  t.same(facts.attributesOf(ids[ids.length - 1]!, undefined), largest(ids.length - 1), 'the most recent device is remembered');
});

t.test('small attribute sets: thousands of devices are remembered', async (t) => {
  const facts = new TargetingFacts(BUDGET);
  const ids = Array.from({ length: 2000 }, (_, i) => `device-${i}`);
  for (const id of ids) facts.attributesOf(id, parseAttributes({ tz: 'Europe/Berlin' }));
  t.equal(remembered(facts, ids), ids.length, 'every one of 2000 devices with a tz attribute');
  t.same(facts.attributesOf('device-7', undefined), parseAttributes({ tz: 'Europe/Berlin' }));
  t.equal(facts.attributesOf('never-seen', undefined), NO_ATTRIBUTES);
  const own = parseAttributes({ site: 'lab' });
  t.equal(facts.attributesOf('device-7', own), own, 'a heartbeat\'s own attributes win, and are remembered');
  t.equal(facts.attributesOf('device-7', undefined), own);
});
