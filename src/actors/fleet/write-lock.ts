import { sql, type Kysely, type Transaction } from 'kysely';
import { driverOf } from '../../shared/database/connect.js';
import type { Database } from '../../shared/database/schema.js';

// Admin writes that check before they act (count the groups, then insert one; look for a
// device's tags, then replace them) must not interleave with another of their kind. On SQLite
// they cannot: the one connection runs one transaction at a time. On PostgreSQL each replica of
// a cluster (and each connection of one replica's pool) runs its own, at READ COMMITTED, where
// two of them both count 255 groups, or both find no row of a name, before either inserts.
// So there the transaction first takes the table in SHARE ROW EXCLUSIVE mode: it conflicts with
// itself and with every INSERT, UPDATE and DELETE of the table, not with reads, and every
// statement after it reads what the transactions before it committed. (The inventory's write
// of device attributes takes it too, but only once it finds something to write: lockForWrite.)

/** What a check-then-act write locks: a table, or (pending_enrollments) an advisory lock of its own. */
export type WriteLock = 'device_attributes' | 'device_groups' | 'device_tags' | 'operator_tokens' | 'pending_enrollments';

/**
 * pg_advisory_xact_lock keys of the writes no table lock fits: a new device's pending row is
 * counted against devices.max_pending, and device_identities is also written by every POST
 * /auth of known devices, which must not wait for enrollments.
 */
const ADVISORY_KEYS: Partial<Record<WriteLock, number>> = {
  pending_enrollments: 0x7570_656e, // "upen"
};

/** Runs `fn` in a transaction that, on PostgreSQL, holds `what` against other writers of it until it ends. */
export async function writeLocked<T>(db: Kysely<Database>, what: WriteLock, fn: (tx: Transaction<Database>) => Promise<T>): Promise<T> {
  const postgres = driverOf(db).engine === 'postgres';
  return db.transaction().execute(async (tx) => {
    if (postgres) await takeWriteLock(tx, what);
    return fn(tx);
  });
}

/**
 * Takes `what` in a transaction already begun on PostgreSQL (`db` is the transaction's
 * database), for a write that finds out part way through that it must write; nothing on SQLite.
 * What the transaction read before it may have changed since: read it again.
 */
export async function lockForWrite(db: Kysely<Database>, tx: Transaction<Database>, what: WriteLock): Promise<void> {
  if (driverOf(db).engine === 'postgres') await takeWriteLock(tx, what);
}

function takeWriteLock(tx: Transaction<Database>, what: WriteLock): Promise<unknown> {
  const key = ADVISORY_KEYS[what];
  return (key === undefined ? sql`lock table ${sql.table(what)} in share row exclusive mode` : sql`select pg_advisory_xact_lock(${key})`).execute(tx);
}
