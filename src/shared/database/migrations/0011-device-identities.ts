import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../schema.js';

/**
 * Device identities (devices.auth): the key each device id is bound to, its enrollment state and
 * the timestamp of its last verified auth request; the revocations the front-ends refuse tokens
 * by; and the token MAC key, kept here so that every replica of a cluster checks alike.
 */
export function devices0011(engine: Engine): Migration {
  const big = engine === 'postgres' ? 'bigint' : 'integer';
  const key = engine === 'postgres' ? sql`text collate "C"` : sql`text`;
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createTable('device_identities')
        .addColumn('device_id', key, (c) => c.primaryKey())
        .addColumn('public_key', 'text', (c) => c.notNull())
        .addColumn('auth_state', 'text', (c) => c.notNull())
        .addColumn('last_auth_at', big, (c) => c.notNull())
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('updated_at', big, (c) => c.notNull())
        .execute();
      // The pending count (max_pending) and the list filtered by state walk this index.
      await db.schema.createIndex('device_identities_state_id').on('device_identities').columns(['auth_state', 'device_id']).execute();
      await db.schema.createTable('device_revocations')
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('device_id', 'text', (c) => c.notNull())
        .addColumn('revoked_at', big, (c) => c.notNull())
        .execute();
      await db.schema.createTable('device_auth_keys')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('device_auth_keys').execute();
      await db.schema.dropTable('device_revocations').execute();
      await db.schema.dropTable('device_identities').execute();
    },
  };
}
