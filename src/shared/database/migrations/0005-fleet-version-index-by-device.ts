import { type Kysely, type Migration } from 'kysely';

/**
 * The index on (artifact, version_hash, version) was a trap for the flush's touch on
 * PostgreSQL: the touch joins devices on device_id, artifact, version_hash and version, and a
 * planner without statistics for a table that grew since its last ANALYZE (the touch is a named
 * statement, planned generically) took that index as selective, so every touched device read
 * the whole range of its track and version: a flush of 5,000 devices ran for seconds, growing
 * with the fleet, and the buffer dropped what came meanwhile. Its one reader since 0002 (the
 * fleet summary now reads fleet_versions) was a device list filtered by version, which the
 * replacement serves better: (artifact, version_hash, device_id) walks one version's devices
 * in the list's order, and every index the touch can reach now ends in device_id, so any probe
 * the planner picks finds one row.
 */
export function fleet0005(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.dropIndex('devices_artifact_version').execute();
      // IF NOT EXISTS: an operator upgrading a large PostgreSQL database may have built it
      // beforehand with CREATE INDEX CONCURRENTLY, so writes never wait for it (docs/fleet.md).
      await db.schema.createIndex('devices_artifact_hash_id').ifNotExists().on('devices').columns(['artifact', 'version_hash', 'device_id']).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('devices_artifact_hash_id').execute();
      await db.schema.createIndex('devices_artifact_version').on('devices').columns(['artifact', 'version_hash', 'version']).execute();
    },
  };
}
