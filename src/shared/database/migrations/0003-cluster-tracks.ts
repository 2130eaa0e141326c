import { type Kysely, type Migration } from 'kysely';

/**
 * The tracks of a cluster (docs/scaling.md): what `store.state_file` holds on one node. Created
 * on both engines so that the schema is one; SQLite never fills them.
 */
export function cluster0003(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createTable('cluster_tracks')
        .addColumn('artifact', 'text', (c) => c.primaryKey())
        .addColumn('doc', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createTable('cluster_meta')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('cluster_meta').execute();
      await db.schema.dropTable('cluster_tracks').execute();
    },
  };
}
