import type { HeartbeatRecord, ReportRecord } from '../../../messages/fleet.js';
import type { Engine } from '../../../shared/database/schema.js';

// The inventory's one hot write: a flush of heartbeats and reports, in one transaction. It is
// the only place that goes around the query builder, on purpose: at tens of thousands of
// heartbeats a second, compiling one builder upsert per chunk costs more CPU than the database
// spends, so each engine gets the same statements in its cheapest form (multi-row statements
// prepared once inside a better-sqlite3 transaction, store-sqlite.ts; array parameters and
// unnest() on PostgreSQL, store-postgres.ts). Both run the same plan:
//
//   1. touch   devices whose row already holds this track, hash and version: only last_seen,
//              hardware and transport move (the steady state: an update by device_id, no
//              read), set-based, the devices of one version together (moves.ts, versionGroups)
//   2. the rest (the devices of a touch statement that missed any): read where each was,
//              upsert those new or moved, and move one count in fleet_versions per
//              device that changed track or version (only the fleet actor writes, so nothing
//              moves between the read and the write)
//   3. reports appended, and each reporting device's last report put on its row
//
// Every other query of the inventory is portable SQL through Kysely (queries.ts). Which
// implementation a database gets is decided once, in store-of.ts.

/** The engine-specific half of the fleet database: one implementation per engine, chosen once. */
export interface FleetStore {
  readonly engine: Engine;
  /**
   * Writes one flush in one transaction. A device may appear once per call (the write buffer
   * keeps only each device's newest heartbeat); reports keep their order.
   */
  writeBatch(heartbeats: readonly HeartbeatRecord[], reports: readonly ReportRecord[]): Promise<void>;
}
