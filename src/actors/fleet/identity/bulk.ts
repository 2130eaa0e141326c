import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { PendingFilter } from '../../../messages/fleet.js';
import type { Database } from '../../../shared/database/schema.js';

// The operator's bulk answer to an anonymous enrollment burst (docs/operations.md, "Enrolling
// devices"): reject or delete every pending enrollment a filter names, in one statement, rather
// than one call per id while genuine devices wait at DEVICE_PENDING_FULL. Only live pending
// enrollments are touched: an expired one is already as if it had never been (identities.ts).
// The ids answered are those this call changed: of concurrent calls (two operators, two
// replicas) each id is answered by the one whose statement settled it, and an id accepted
// between the read and the write is left out.

type Db = Kysely<Database>;
/** Each statement names its ids in chunks this size (SQLite allows 32,766 parameters). */
const CHUNK = 1000;

/** The ids of the live pending enrollments the filter names, in id order. */
async function matching(db: Db, filter: PendingFilter, livePendingSince: number): Promise<string[]> {
  let query: SelectQueryBuilder<Database, 'device_identities', { device_id: string }> = db.selectFrom('device_identities').select('device_id')
    .where('auth_state', '=', 'pending').where('created_at', '>=', Math.max(livePendingSince, filter.createdSince ?? 0));
  if (filter.idPrefix !== undefined) {
    // substr rather than LIKE: a prefix holding % or _ means itself, on both engines.
    const prefix = filter.idPrefix;
    query = query.where((eb) => eb(eb.fn('substr', ['device_id', eb.val(1), eb.val(prefix.length)]), '=', prefix));
  }
  return (await query.orderBy('device_id').execute()).map((r) => r.device_id);
}

/**
 * Rejects the matching pending enrollments; the ids rejected. A pending device holds no token,
 * so nothing is revoked; the rejection holds until an operator accepts the id.
 */
export async function rejectPending(db: Db, filter: PendingFilter, livePendingSince: number, now: number): Promise<string[]> {
  return db.transaction().execute(async (tx) => {
    const ids = await matching(tx, filter, livePendingSince);
    const done = new Set<string>();
    for (let i = 0; i < ids.length; i += CHUNK) {
      const rows = await tx.updateTable('device_identities').set({ auth_state: 'rejected', updated_at: now })
        .where('device_id', 'in', ids.slice(i, i + CHUNK)).where('auth_state', '=', 'pending').returning('device_id').execute();
      for (const row of rows) done.add(row.device_id);
    }
    return ids.filter((id) => done.has(id));
  });
}

/** Deletes the matching pending enrollments (the key claims; an id may then enroll again, with any key); the ids deleted. */
export async function deletePending(db: Db, filter: PendingFilter, livePendingSince: number): Promise<string[]> {
  return db.transaction().execute(async (tx) => {
    const ids = await matching(tx, filter, livePendingSince);
    const done = new Set<string>();
    for (let i = 0; i < ids.length; i += CHUNK) {
      const rows = await tx.deleteFrom('device_identities').where('device_id', 'in', ids.slice(i, i + CHUNK)).where('auth_state', '=', 'pending')
        .returning('device_id').execute();
      for (const row of rows) done.add(row.device_id);
    }
    return ids.filter((id) => done.has(id));
  });
}
