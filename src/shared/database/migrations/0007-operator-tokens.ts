import { type Kysely, type Migration } from 'kysely';
import type { Engine } from '../schema.js';

/**
 * Operator tokens (docs/operations.md): the SHA-256 of each token, never the token; a revoked
 * token's row is deleted.
 */
export function operators0007(engine: Engine): Migration {
  const big = engine === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createTable('operator_tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('hash', 'text', (c) => c.notNull())
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('expires_at', big)
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('operator_tokens').execute();
    },
  };
}
