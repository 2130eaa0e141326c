import { Migrator, sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from './schema.js';
import { devices0011 } from './migrations/0011-device-identities.js';
import { offers0012 } from './migrations/0012-rollout-offers.js';

// Every schema change is a numbered migration, applied in order at start (the fleet actor's
// setup) and never edited once landed: add the next number instead. Column types differ by
// engine only where they must: PostgreSQL needs bigint for 64-bit seconds and bytes, an
// identity column for the report id, and the "C" collation so that device ids sort by code
// point exactly as SQLite's BINARY collation does (cursor pagination relies on that order).
// From 0011 on, each migration is a file of its own in migrations/.

function fleet0001(engine: Engine): Migration {
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

/**
 * Devices per (track, version hash), kept by the flush that moves devices, so that the fleet
 * summary reads a handful of rows instead of counting a million devices.
 */
function fleet0002(): Migration {
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

/**
 * The tracks of a cluster (docs/scaling.md): what `store.state_file` holds on one node. Created
 * on both engines so that the schema is one; SQLite never fills them.
 */
function cluster0003(): Migration {
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

/**
 * The heartbeat flush touches every device's last_seen about as often as devices check in,
 * and an index on it made each touch an index write as well: on PostgreSQL it also ruled out
 * HOT updates (a new row version without a new entry in every index), which made a touch
 * several times dearer. Retention's scan by last_seen runs once per retention interval, and a
 * device list filtered by it walks device_id order with the filter, so neither needs the
 * index. Free room on each PostgreSQL page lets the new row version stay on its page (HOT);
 * it applies to pages written from now on (VACUUM FULL devices applies it to the others).
 */
function fleet0004(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.dropIndex('devices_last_seen').execute();
      if (engine === 'postgres') await sql`alter table devices set (fillfactor = 80)`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (engine === 'postgres') await sql`alter table devices reset (fillfactor)`.execute(db);
      await db.schema.createIndex('devices_last_seen').on('devices').column('last_seen').execute();
    },
  };
}

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
function fleet0005(): Migration {
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

/**
 * Half of each PostgreSQL page left free instead of a fifth. With a fifth free, a page whose
 * devices checked in several times between two prunes ran out of room, and the new row
 * version went to another page: an entry in every index and four WAL records instead of one.
 * Measured on the fleet bench's flush (100,000 devices, 18,000 touched a second): 55 % of the
 * touches were HOT at 80, 91 % at 60, all at 50, where a touch cost half the backend's CPU
 * (12.5 µs → 6 µs) and a third of the WAL (358 → 90 bytes), and the table, no longer bloated by
 * row versions on other pages, stayed smaller than at 80 (37 MB against 70 MB). Pages written
 * before stay as they were until rewritten (VACUUM FULL devices).
 */
function fleet0006(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (engine === 'postgres') await sql`alter table devices set (fillfactor = 50)`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (engine === 'postgres') await sql`alter table devices set (fillfactor = 80)`.execute(db);
    },
  };
}

/**
 * Operator tokens (docs/operations.md): the SHA-256 of each token, never the token; a revoked
 * token's row is deleted.
 */
function operators0007(engine: Engine): Migration {
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

/** The audit log of admin requests, newest first by id; retention deletes by `at`. */
function audit0008(engine: Engine): Migration {
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

/**
 * Reports keep the moment they were received to the millisecond. A rollout counts the reports
 * received from its start (or resume) on, and with whole seconds it had to round that moment
 * up: every report of the first second was lost (20 failure reports sent right after a publish
 * counted as none). Nullable, so adding it rewrites no row on either engine; rows from before
 * keep their whole seconds (fleet-queries.ts reads them as before).
 */
function reports0009(engine: Engine): Migration {
  const big = engine === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('reports').addColumn('received_at_ms', big).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('reports').dropColumn('received_at_ms').execute();
    },
  };
}

/**
 * The webhooks' outbox (docs/operations.md, "Webhooks"): one row per (event, webhook), written
 * when the event happens and sent from here, so that an event survives a restart and a
 * receiver that is down. Times in Unix milliseconds: the backoff's first retry is seconds away.
 * The sender walks each webhook's pending rows in id order (in order per webhook).
 */
function webhooks0010(engine: Engine): Migration {
  const big = engine === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      let table = db.schema.createTable('webhook_outbox');
      table = engine === 'postgres'
        ? table.addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
        : table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await table
        .addColumn('webhook', 'text', (c) => c.notNull())
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_at', big, (c) => c.notNull())
        .addColumn('last_status', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('done_at', big)
        .execute();
      await db.schema.createIndex('webhook_outbox_queue').on('webhook_outbox').columns(['webhook', 'state', 'id']).execute();
      await db.schema.createIndex('webhook_outbox_done').on('webhook_outbox').column('done_at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('webhook_outbox').execute();
    },
  };
}

/** The migrations in order; names sort as numbers so Kysely applies them in this order. */
export function migrations(engine: Engine): Record<string, Migration> {
  return {
    '0001_fleet_inventory': fleet0001(engine),
    '0002_fleet_version_counts': fleet0002(),
    '0003_cluster_tracks': cluster0003(),
    '0004_fleet_touch_without_last_seen_index': fleet0004(engine),
    '0005_fleet_version_index_by_device': fleet0005(),
    '0006_fleet_half_free_pages': fleet0006(engine),
    '0007_operator_tokens': operators0007(engine),
    '0008_audit_log': audit0008(engine),
    '0009_reports_received_ms': reports0009(engine),
    '0010_webhook_outbox': webhooks0010(engine),
    '0011_device_identities': devices0011(engine),
    '0012_rollout_offers': offers0012(engine),
  };
}

/** Brings an empty or older database up to the latest schema; throws on the first failure. */
export async function migrateToLatest(db: Kysely<unknown>, engine: Engine): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations(engine) } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
