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
// statement after it reads what the transactions before it committed.

/** The tables whose admin writes check, then act. */
export type LockedTable = 'device_groups' | 'device_tags' | 'operator_tokens';

/** Runs `fn` in a transaction that, on PostgreSQL, holds `table` against other writers until it ends. */
export async function writeLocked<T>(db: Kysely<Database>, table: LockedTable, fn: (tx: Transaction<Database>) => Promise<T>): Promise<T> {
  const postgres = driverOf(db).engine === 'postgres';
  return db.transaction().execute(async (tx) => {
    if (postgres) await sql`lock table ${sql.table(table)} in share row exclusive mode`.execute(tx);
    return fn(tx);
  });
}
