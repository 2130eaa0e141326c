import { Migrator, type Kysely, type Migration } from 'kysely';
import type { Engine } from './schema.js';
import { fleet0001 } from './migrations/0001-fleet-inventory.js';
import { fleet0002, recountVersions } from './migrations/0002-fleet-version-counts.js';
import { cluster0003 } from './migrations/0003-cluster-tracks.js';
import { fleet0004 } from './migrations/0004-fleet-touch-without-last-seen-index.js';
import { fleet0005 } from './migrations/0005-fleet-version-index-by-device.js';
import { fleet0006 } from './migrations/0006-fleet-half-free-pages.js';
import { operators0007 } from './migrations/0007-operator-tokens.js';
import { audit0008 } from './migrations/0008-audit-log.js';
import { reports0009 } from './migrations/0009-reports-received-ms.js';
import { webhooks0010 } from './migrations/0010-webhook-outbox.js';
import { devices0011 } from './migrations/0011-device-identities.js';
import { offers0012 } from './migrations/0012-rollout-offers.js';
import { targeting0013 } from './migrations/0013-targeting.js';

// Every schema change is a numbered migration, applied in order at start (the fleet actor's
// setup) and never edited once landed: add the next number instead. Column types differ by
// engine only where they must: PostgreSQL needs bigint for 64-bit seconds and bytes, an
// identity column for the report id, and the "C" collation so that device ids sort by code
// point exactly as SQLite's BINARY collation does (cursor pagination relies on that order).
// Each migration is a file of its own in migrations/, named by its number.


export { recountVersions };

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
    '0013_targeting': targeting0013(engine),
  };
}

/** Brings an empty or older database up to the latest schema; throws on the first failure. */
export async function migrateToLatest(db: Kysely<unknown>, engine: Engine): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations(engine) } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
