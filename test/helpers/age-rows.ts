import Database from 'better-sqlite3';
import pg from 'pg';
import type { Engine } from '../../src/shared/database/schema.js';

// Time passing for what a server keeps in its database, without waiting for it: a test moves a
// table's Unix-second column back by `seconds` (pending enrollments older than pending_ttl, a
// revocation older than token_ttl), and the server, reading its clock, sees that much time gone.

type AgedColumn = { table: 'device_identities'; column: 'created_at' } | { table: 'device_revocations'; column: 'revoked_at' };

/** Moves `column` of the rows whose device_id is one of `ids` back by `seconds`; the rows changed. */
export async function ageRows(engine: Engine, location: string, what: AgedColumn, ids: readonly string[], seconds: number): Promise<number> {
  const { table, column } = what;
  if (engine === 'sqlite') {
    const db = new Database(location);
    try {
      db.pragma('busy_timeout = 5000');
      const marks = ids.map(() => '?').join(', ');
      return db.prepare(`UPDATE ${table} SET ${column} = ${column} - ? WHERE device_id IN (${marks})`).run(seconds, ...ids).changes;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: location });
  await client.connect();
  try {
    const result = await client.query(`UPDATE ${table} SET ${column} = ${column} - $1 WHERE device_id = ANY($2)`, [seconds, ids]);
    return result.rowCount ?? 0;
  } finally {
    await client.end();
  }
}
