import type { Kysely } from 'kysely';
import type { GroupView } from '../../../messages/fleet.js';
import type { Database } from '../../../shared/database/schema.js';
import { UpdaterError } from '../../../shared/errors.js';
import { filterJson, parseFilter, type TargetFilter } from '../../../shared/targeting/filter.js';
import { writeLocked } from '../write-lock.js';
import { byCodePoint, countMatching } from './targeting.js';

// Groups: named filters, kept as the JSON the API shows and evaluated when asked, so that a
// device that starts to match is a member from then on (docs/rollouts.md, "Groups").

type Db = Kysely<Database>;
/** Groups are few (an operator names them); counting every one answers GET /admin/groups. */
export const MAX_GROUPS = 256;

/** A stored filter, parsed again with the API's rules (the row was written from a parsed one). */
export function storedFilter(text: string): TargetFilter {
  return parseFilter(JSON.parse(text), 'filter');
}

async function view(db: Db, name: string, filterText: string, nowMs: number): Promise<GroupView> {
  const filter = storedFilter(filterText);
  return { name, filter: filterJson(filter), devices: await countMatching(db, filter, nowMs) };
}

export async function putGroup(db: Db, name: string, filter: TargetFilter, nowMs: number): Promise<GroupView> {
  const text = JSON.stringify(filterJson(filter));
  const now = Math.floor(nowMs / 1000);
  // Under the table's write lock (write-lock.ts): the count and the insert are one step for
  // every replica, so the cap holds and two creations of one name never both insert.
  await writeLocked(db, 'device_groups', async (tx) => {
    const exists = await tx.selectFrom('device_groups').select('name').where('name', '=', name).executeTakeFirst();
    if (exists) {
      await tx.updateTable('device_groups').set({ filter: text, updated_at: now }).where('name', '=', name).execute();
      return;
    }
    const count = Number((await tx.selectFrom('device_groups').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    if (count >= MAX_GROUPS) throw new UpdaterError('TOO_MANY_GROUPS', `there are already ${MAX_GROUPS} groups; delete one first`);
    await tx.insertInto('device_groups').values({ name, filter: text, created_at: now, updated_at: now }).execute();
  });
  return view(db, name, text, nowMs);
}

export async function group(db: Db, name: string, nowMs: number): Promise<GroupView | null> {
  const row = await db.selectFrom('device_groups').selectAll().where('name', '=', name).executeTakeFirst();
  return row ? view(db, row.name, row.filter, nowMs) : null;
}

export async function groups(db: Db, nowMs: number): Promise<GroupView[]> {
  // By name in code point order, sorted here: on PostgreSQL the column has the database's collation.
  const rows = (await db.selectFrom('device_groups').selectAll().execute()).sort((a, b) => byCodePoint(a.name, b.name));
  const out: GroupView[] = [];
  for (const row of rows) out.push(await view(db, row.name, row.filter, nowMs));
  return out;
}

export async function groupNames(db: Db): Promise<string[]> {
  return (await db.selectFrom('device_groups').select('name').execute()).map((r) => r.name).sort(byCodePoint);
}

/** The group's filter, for `GET /admin/devices?group=`; GROUP_NOT_FOUND when there is none. */
export async function groupFilter(db: Db, name: string): Promise<TargetFilter> {
  const row = await db.selectFrom('device_groups').select('filter').where('name', '=', name).executeTakeFirst();
  if (!row) throw new UpdaterError('GROUP_NOT_FOUND', `no group ${JSON.stringify(name)}`, { field: 'group' });
  return storedFilter(row.filter);
}

/** The group as it was when this call deleted it; null when there was none (or another call deleted it first). */
export async function deleteGroup(db: Db, name: string, nowMs: number): Promise<GroupView | null> {
  // One statement: of concurrent deletes of a group, only the one whose DELETE removed the row answers it.
  const row = await db.deleteFrom('device_groups').where('name', '=', name).returning(['name', 'filter']).executeTakeFirst();
  return row ? view(db, row.name, row.filter, nowMs) : null;
}
