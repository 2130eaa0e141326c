import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Devices per (track, version hash), kept by the flush that moves devices, so that the fleet
 * summary reads a handful of rows instead of counting a million devices.
 */
export function fleet0002(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createTable('fleet_versions')
        .addColumn('artifact', 'text', (c) => c.notNull())
        .addColumn('version_hash', 'text', (c) => c.notNull())
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('devices', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('fleet_versions_pk', ['artifact', 'version_hash'])
        .execute();
      await recountVersions(db);
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('fleet_versions').execute();
    },
  };
}

/** Rebuilds fleet_versions from the devices table (after a migration, and after retention). */
export async function recountVersions(db: Kysely<any>): Promise<void> {
  await sql`delete from fleet_versions`.execute(db);
  await sql`insert into fleet_versions (artifact, version_hash, version, devices)
    select artifact, version_hash, max(version), count(*) from devices group by artifact, version_hash`.execute(db);
}
