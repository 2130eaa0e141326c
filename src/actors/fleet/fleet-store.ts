import type { Kysely } from 'kysely';
import type { HeartbeatRecord, ReportRecord } from '../../messages/fleet.js';
import { driverOf } from './connect.js';
import { writeBatchPostgres } from './fleet-writes-postgres.js';
import { writeBatchSqlite } from './fleet-writes-sqlite.js';
import type { Database } from './schema.js';

// The inventory's one hot write: a flush of heartbeats and reports, in one transaction. It is
// the only place that goes around the query builder, on purpose: at tens of thousands of
// heartbeats a second, compiling one builder upsert per chunk costs more CPU than the database
// spends, so each engine gets the same statements in its cheapest form (a prepared statement
// per row inside a better-sqlite3 transaction; array parameters and unnest() on PostgreSQL).
// Both run the same plan:
//
//   1. touch   devices whose row already holds this track, hash and version: only last_seen,
//              hardware and transport move (the steady state: one indexed update, no read)
//   2. the rest: read where each was, upsert it, and move one count in fleet_versions per
//              device that changed track or version (only the fleet actor writes, so nothing
//              moves between the read and the write)
//   3. reports appended, and each reporting device's last report put on its row

/**
 * Writes one flush in one transaction. A device may appear once per call (the write buffer
 * keeps only each device's newest heartbeat); reports keep their order.
 */
export async function writeBatch(db: Kysely<Database>, heartbeats: readonly HeartbeatRecord[], reports: readonly ReportRecord[]): Promise<void> {
  if (heartbeats.length === 0 && reports.length === 0) return;
  const driver = driverOf(db);
  if (driver.engine === 'sqlite') writeBatchSqlite(driver.file, heartbeats, reports);
  else await writeBatchPostgres(driver.pool, heartbeats, reports);
}
