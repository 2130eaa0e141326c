import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../schema.js';

export function fleet0001(engine: Engine): Migration {
  const big = engine === 'postgres' ? 'bigint' : 'integer';
  const key = engine === 'postgres' ? sql`text collate "C"` : sql`text`;
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createTable('devices')
        .addColumn('device_id', key, (c) => c.primaryKey())
        .addColumn('artifact', 'text', (c) => c.notNull())
        .addColumn('version_hash', 'text', (c) => c.notNull())
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('hw_arch', 'text', (c) => c.notNull())
        .addColumn('hw_os', 'text', (c) => c.notNull())
        .addColumn('hw_free_ram', big, (c) => c.notNull())
        .addColumn('hw_free_disk', big, (c) => c.notNull())
        .addColumn('transport', 'text', (c) => c.notNull())
        .addColumn('first_seen', big, (c) => c.notNull())
        .addColumn('last_seen', big, (c) => c.notNull())
        .addColumn('last_report_success', 'integer')
        .addColumn('last_report_new_hash', 'text')
        .addColumn('last_report_reason', 'text')
        .addColumn('last_report_at', big)
        .execute();
      // The summary counts per version without reading the table; the list filters by track.
      await db.schema.createIndex('devices_artifact_version').on('devices').columns(['artifact', 'version_hash', 'version']).execute();
      await db.schema.createIndex('devices_artifact_id').on('devices').columns(['artifact', 'device_id']).execute();
      await db.schema.createIndex('devices_last_seen').on('devices').column('last_seen').execute();

      let reports = db.schema.createTable('reports');
      reports = engine === 'postgres'
        ? reports.addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
        : reports.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await reports
        .addColumn('device_id', key, (c) => c.notNull())
        .addColumn('previous_hash', 'text', (c) => c.notNull())
        .addColumn('new_hash', 'text', (c) => c.notNull())
        .addColumn('success', 'integer', (c) => c.notNull())
        .addColumn('rollback_reason', 'text', (c) => c.notNull())
        .addColumn('timestamp', big, (c) => c.notNull())
        .addColumn('received_at', big, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('reports_device').on('reports').columns(['device_id', 'id']).execute();
      await db.schema.createIndex('reports_target').on('reports').columns(['new_hash', 'received_at']).execute();
      await db.schema.createIndex('reports_received').on('reports').column('received_at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('reports').execute();
      await db.schema.dropTable('devices').execute();
    },
  };
}
