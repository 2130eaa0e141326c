import t from 'tap';
import type { Kysely } from 'kysely';
import { writeAttributes } from '../../../../src/actors/fleet/inventory/targeting.js';
import type { Database } from '../../../../src/shared/database/schema.js';
import { ENGINES, openTestReplicas } from '../../../helpers/databases.js';
import { outcomes } from '../../../helpers/races.js';

// Two replicas of a cluster write the attributes of the same devices at once: a device behind
// a load balancer without affinity heartbeats to both within one flush interval, and each
// replica's flush writes the set it last saw. Each read the stored sets, deleted the devices'
// rows and inserted the new ones; at READ COMMITTED the second insert of a (device, name) met
// the first's row and failed with a duplicate key (the batch was written again by the next
// flush), or the two deadlocked. Both writes must succeed, and every device must end with one
// of the two sets whole, never a mix of both.

const DEVICES = 200;
const ROUNDS = 4;

/** Sets the two replicas tell apart by their names as well as their values: a mix shows. */
const setOf = (side: 'a' | 'b', round: number): Record<string, string> =>
  side === 'a' ? { site: `a${round}`, hw_rev: 'A' } : { site: `b${round}`, tz: 'UTC', ring: String(round) };

async function storedSets(db: Kysely<Database>): Promise<Map<string, string>> {
  const sets = new Map<string, Record<string, string>>();
  for (const row of await db.selectFrom('device_attributes').selectAll().execute()) {
    const set = sets.get(row.device_id) ?? {};
    set[row.name] = row.value;
    sets.set(row.device_id, set);
  }
  return new Map([...sets].map(([id, set]) => [id, JSON.stringify(Object.fromEntries(Object.entries(set).sort()))]));
}

const text = (set: Record<string, string>) => JSON.stringify(Object.fromEntries(Object.entries(set).sort()));

for (const engine of ENGINES) {
  t.test(`${engine}: two replicas writing the same devices' attributes at once both succeed, and each device keeps one set whole`, async (t) => {
    const [a, b = a] = await openTestReplicas(t, engine, 2, 'updater-attributes-race-');
    const ids = Array.from({ length: DEVICES }, (_, i) => `dev-${String(i).padStart(4, '0')}`);
    // Round 0 inserts every row (no device has attributes yet); the later rounds replace them.
    for (let round = 0; round < ROUNDS; round++) {
      const fromA = ids.map((deviceId) => ({ deviceId, attributes: setOf('a', round) }));
      // The other replica's buffer holds the devices in another order.
      const fromB = ids.map((deviceId) => ({ deviceId, attributes: setOf('b', round) })).reverse();
      const results = await Promise.allSettled([writeAttributes(a!, fromA), writeAttributes(b!, fromB)]);
      t.same(outcomes(results), { 200: 2 }, `round ${round}: both writes succeeded (no duplicate key, no deadlock)`);
      const stored = await storedSets(a!);
      const whole = [text(setOf('a', round)), text(setOf('b', round))];
      const odd = ids.filter((id) => !whole.includes(stored.get(id) ?? '{}'));
      t.same(odd.map((id) => `${id}: ${stored.get(id) ?? '{}'}`), [], `round ${round}: every device holds one replica's set, whole`);
    }
  });
}
