import { sql, type Expression, type ExpressionBuilder, type Kysely, type SqlBool } from 'kysely';
import type { AttributesRecord, DeviceView, TagChange } from '../../../messages/fleet.js';
import type { Database } from '../../../shared/database/schema.js';
import { MAX_TAGS, refuse } from '../../../shared/targeting/names.js';
import { lockForWrite, writeLocked } from '../write-lock.js';
import type { TargetFilter } from '../../../shared/targeting/filter.js';
import { storedValue } from '../../../shared/targeting/attributes.js';

// Attributes and tags in the fleet database (migration 0013), and a filter as SQL: the same
// meaning as `matches` in src/shared/targeting/filter.ts, in portable SQL (an EXISTS per tag
// and per attribute condition, each an index probe), so that both engines answer alike.

type Db = Kysely<Database>;
/** No condition at all (an empty filter): a literal both engines read as true, with nothing bound. */
export const EVERY = sql<SqlBool>`1 = 1`;
/** Rows per statement: far below SQLite's 32,766 bound parameters and PostgreSQL's 65,535. */
const CHUNK = 500;

/** The filter as a condition on `devices` (an empty filter is no condition: undefined). */
export function filterCondition(eb: ExpressionBuilder<Database, 'devices'>, filter: TargetFilter, nowMs: number): Expression<SqlBool> | undefined {
  const all: Expression<SqlBool>[] = [];
  if (filter.artifact !== undefined) all.push(eb('devices.artifact', '=', filter.artifact));
  if (filter.versionHash !== undefined) all.push(eb('devices.version_hash', '=', filter.versionHash));
  // Not before the epoch: a duration may be any number of digits, and PostgreSQL's bigint holds no 1e22 seconds, nor -Infinity.
  if (filter.seenWithinMs !== undefined) all.push(eb('devices.last_seen', '>=', Math.max(0, Math.floor((nowMs - filter.seenWithinMs) / 1000))));
  for (const tag of filter.tags ?? []) {
    all.push(eb.exists(eb.selectFrom('device_tags as ft').select('ft.device_id')
      .whereRef('ft.device_id', '=', 'devices.device_id').where('ft.tag', '=', tag)));
  }
  const attributes = filter.attributes ?? {};
  for (const name of Object.keys(attributes)) {
    all.push(eb.exists(eb.selectFrom('device_attributes as fa').select('fa.device_id')
      .whereRef('fa.device_id', '=', 'devices.device_id').where('fa.name', '=', name).where('fa.value', 'in', attributes[name]!.map(storedValue))));
  }
  return all.length === 0 ? undefined : eb.and(all);
}

/** How many devices the filter matches now. */
export async function countMatching(db: Db, filter: TargetFilter, nowMs: number): Promise<number> {
  const row = await db.selectFrom('devices').select((eb) => eb.fn.countAll<number>().as('n'))
    .where((eb) => filterCondition(eb, filter, nowMs) ?? EVERY).executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Replaces each device's attribute set with the one it sent last (the latest per device wins).
 * An agent sends the same set with every heartbeat: a set equal to the stored one is read, not
 * written again, so a steady fleet costs one indexed read per 500 devices a flush.
 *
 * Two replicas of a cluster may write the same device at once (a load balancer without
 * affinity): both would delete its rows and insert their own, and at READ COMMITTED the second
 * insert met the first's rows (a duplicate key, the batch failed) or the two mixed their sets.
 * So the first chunk that has something to write takes the table's write lock (write-lock.ts;
 * nothing on SQLite) and is read again under it: writes take effect one after another, each
 * device keeps the set of the last to commit, whole, and a steady fleet still takes no lock.
 */
export async function writeAttributes(db: Db, records: readonly AttributesRecord[]): Promise<{ written: number }> {
  if (records.length === 0) return { written: 0 };
  const latest = new Map<string, string>();
  // Values as stored (storedValue: U+0000 and unpaired surrogates as U+FFFD), the same on both
  // engines, and the stored set must compare equal to the one the device sends again.
  for (const r of records) latest.set(r.deviceId, canonical(Object.entries(r.attributes).map(([name, value]) => [name, storedValue(value)])));
  const ids = [...latest.keys()];
  let written = 0;
  await db.transaction().execute(async (tx) => {
    /** The devices of `chunk` whose stored set differs from the latest one. */
    const changedOf = async (chunk: string[]): Promise<string[]> => {
      const stored = new Map<string, [string, string][]>();
      for (const row of await tx.selectFrom('device_attributes').selectAll().where('device_id', 'in', chunk).execute()) {
        const list = stored.get(row.device_id) ?? [];
        if (list.length === 0) stored.set(row.device_id, list);
        list.push([row.name, row.value]);
      }
      return chunk.filter((id) => canonical(stored.get(id) ?? []) !== latest.get(id));
    };
    let locked = false;
    for (let i = 0; i < ids.length; i += CHUNK) {
      let changed = await changedOf(ids.slice(i, i + CHUNK));
      if (changed.length === 0) continue;
      if (!locked) {
        await lockForWrite(db, tx, 'device_attributes');
        locked = true;
        // Another replica may have written some of them between the read and the lock.
        changed = await changedOf(changed);
        if (changed.length === 0) continue;
      }
      written += changed.length;
      await tx.deleteFrom('device_attributes').where('device_id', 'in', changed).execute();
      const rows = changed.flatMap((id) => (JSON.parse(latest.get(id)!) as [string, string][]).map(([name, value]) => ({ device_id: id, name, value })));
      for (let j = 0; j < rows.length; j += CHUNK) await tx.insertInto('device_attributes').values(rows.slice(j, j + CHUNK)).execute();
    }
  });
  return { written };
}

/** A set as one comparable text: its entries sorted by name. */
function canonical(entries: [string, string][]): string {
  return JSON.stringify(entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
}

/** Adds `attributes` and `tags` to views read from the inventory (a device with none shows {} and []). */
export async function withTargeting<V extends DeviceView>(db: Db, views: V[]): Promise<V[]> {
  const ids = views.map((v) => v.device_id);
  const attributes = new Map<string, Record<string, string>>();
  const tags = new Map<string, string[]>();
  for (let i = 0; i < ids.length; i += CHUNK) {
    const chunk = ids.slice(i, i + CHUNK);
    for (const row of await db.selectFrom('device_attributes').selectAll().where('device_id', 'in', chunk).execute()) {
      let set = attributes.get(row.device_id);
      if (!set) attributes.set(row.device_id, (set = {}));
      Object.defineProperty(set, row.name, { value: row.value, enumerable: true, writable: true, configurable: true });
    }
    for (const row of await db.selectFrom('device_tags').selectAll().where('device_id', 'in', chunk).execute()) {
      const list = tags.get(row.device_id) ?? [];
      if (list.length === 0) tags.set(row.device_id, list);
      list.push(row.tag);
    }
  }
  for (const view of views) {
    // Sorted here, not by ORDER BY: on PostgreSQL the columns have the database's collation
    // (en_US.UTF-8 puts "canary" before "Lab"); names are ASCII, so this is code point order,
    // SQLite's and parseTagList's.
    const set = attributes.get(view.device_id);
    view.attributes = set ? sortedAttributes(set) : {};
    view.tags = (tags.get(view.device_id) ?? []).sort(byCodePoint);
  }
  return views;
}

/** Code point order of names (ASCII: UTF-16 order is code point order). */
export const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function sortedAttributes(set: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(set).sort(byCodePoint)) Object.defineProperty(out, name, { value: set[name], enumerable: true, writable: true, configurable: true });
  return out;
}

/**
 * Replaces a device's tags; false when the inventory does not hold the device. Under the tags'
 * write lock (write-lock.ts), as changeTags: two replacements of one device never both insert,
 * an addition never counts tags a replacement is about to change, and a delete of the device
 * forgets its tags (forgetTargeting) only after this has written them or found no device.
 */
export async function setTags(db: Db, deviceId: string, tags: readonly string[]): Promise<boolean> {
  return writeLocked(db, 'device_tags', async (tx) => {
    const known = await tx.selectFrom('devices').select('device_id').where('device_id', '=', deviceId).executeTakeFirst();
    if (!known) return false;
    await tx.deleteFrom('device_tags').where('device_id', '=', deviceId).execute();
    if (tags.length > 0) await tx.insertInto('device_tags').values(tags.map((tag) => ({ device_id: deviceId, tag }))).execute();
    return true;
  });
}

/**
 * Adds and removes tags on every device the filter matches, in one transaction; refused (and
 * nothing changed) when a device would end with more than MAX_TAGS. Under the tags' write lock:
 * the count of a device's tags holds until the additions are made, whatever other replicas do.
 */
export async function changeTags(db: Db, change: TagChange, nowMs: number): Promise<{ devices: number }> {
  const { filter, add, remove } = change;
  const matching = (eb: ExpressionBuilder<Database, 'devices'>) => filterCondition(eb, filter, nowMs) ?? EVERY;
  return writeLocked(db, 'device_tags', async (tx) => {
    const devices = Number((await tx.selectFrom('devices').select((eb) => eb.fn.countAll<number>().as('n')).where(matching).executeTakeFirstOrThrow()).n);
    if (add.length > 0) {
      const touched = [...new Set([...add, ...remove])];
      const over = await tx.selectFrom('devices').select((eb) => eb.fn.countAll<number>().as('n')).where(matching)
        .where((eb) => eb(eb.selectFrom('device_tags as kept').select((k) => k.fn.countAll<number>().as('k'))
          .whereRef('kept.device_id', '=', 'devices.device_id').where('kept.tag', 'not in', touched), '>', MAX_TAGS - add.length))
        .executeTakeFirstOrThrow();
      if (Number(over.n) > 0) refuse('add', `would give ${Number(over.n)} device(s) more than ${MAX_TAGS} tags; nothing was changed`);
    }
    for (const tag of add) {
      // `where` on the SELECT keeps SQLite from reading ON CONFLICT as a join constraint.
      await tx.insertInto('device_tags').columns(['device_id', 'tag'])
        .expression((eb) => eb.selectFrom('devices').select(['devices.device_id', sql<string>`cast(${tag} as text)`.as('tag')]).where(matching)
          .where('devices.device_id', 'is not', null))
        .onConflict((oc) => oc.columns(['device_id', 'tag']).doNothing()).execute();
    }
    // Removed last, in one statement: the filter may name a tag the change removes (a rename,
    // filter {"tags":["old"]}, remove ["old"], add ["new"]), and a removal before the additions
    // would leave them no device to match. Adding tags never changes which devices match (they
    // match already), so every statement here sees the devices the count saw.
    if (remove.length > 0) {
      await tx.deleteFrom('device_tags').where('tag', 'in', [...remove])
        .where('device_id', 'in', (eb) => eb.selectFrom('devices').select('devices.device_id').where(matching)).execute();
    }
    return { devices };
  });
}

/** What deleting or pruning devices must also delete, so that a device id that comes back starts bare. */
export async function forgetTargeting(db: Db, deviceIds: readonly string[] | 'orphans'): Promise<void> {
  if (deviceIds === 'orphans') {
    for (const table of ['device_tags', 'device_attributes'] as const) {
      await db.deleteFrom(table).where((eb) => eb.not(eb.exists(eb.selectFrom('devices').select('devices.device_id').whereRef('devices.device_id', '=', `${table}.device_id`)))).execute();
    }
    return;
  }
  for (let i = 0; i < deviceIds.length; i += CHUNK) {
    const chunk = deviceIds.slice(i, i + CHUNK);
    await db.deleteFrom('device_tags').where('device_id', 'in', chunk).execute();
    await db.deleteFrom('device_attributes').where('device_id', 'in', chunk).execute();
  }
}
