import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../schema.js';

/**
 * Targeting (docs/rollouts.md, "Targeting"): the attributes a device last sent, the tags an
 * operator gave it, and the groups (named filters). Attributes and tags are rows, not a JSON
 * column, so that a filter is portable SQL on both engines (an EXISTS per condition) and a
 * tag's devices are an index range.
 */
export function targeting0013(engine: Engine): Migration {
  const big = engine === 'postgres' ? 'bigint' : 'integer';
  const key = engine === 'postgres' ? sql`text collate "C"` : sql`text`;
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createTable('device_attributes')
        .addColumn('device_id', key, (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('device_attributes_pk', ['device_id', 'name'])
        .execute();
      await db.schema.createIndex('device_attributes_name_value').on('device_attributes').columns(['name', 'value', 'device_id']).execute();
      await db.schema.createTable('device_tags')
        .addColumn('device_id', key, (c) => c.notNull())
        .addColumn('tag', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('device_tags_pk', ['device_id', 'tag'])
        .execute();
      await db.schema.createIndex('device_tags_tag').on('device_tags').columns(['tag', 'device_id']).execute();
      await db.schema.createTable('device_groups')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('filter', 'text', (c) => c.notNull())
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('updated_at', big, (c) => c.notNull())
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('device_groups').execute();
      await db.schema.dropTable('device_tags').execute();
      await db.schema.dropTable('device_attributes').execute();
    },
  };
}
