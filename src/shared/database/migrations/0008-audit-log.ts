import { type Kysely, type Migration } from 'kysely';
import type { Engine } from '../schema.js';

/** The audit log of admin requests, newest first by id; retention deletes by `at`. */
export function audit0008(engine: Engine): Migration {
  const big = engine === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      let table = db.schema.createTable('audit_log');
      table = engine === 'postgres'
        ? table.addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
        : table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await table
        .addColumn('at', big, (c) => c.notNull())
        .addColumn('token_id', 'text')
        .addColumn('token_name', 'text')
        .addColumn('role', 'text')
        .addColumn('method', 'text', (c) => c.notNull())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('status', 'integer', (c) => c.notNull())
        .addColumn('detail', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('audit_log_at').on('audit_log').column('at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('audit_log').execute();
    },
  };
}
