import type { Kysely } from 'kysely';
import type { HeartbeatRecord, ReportRecord } from '../../../messages/fleet.js';
import { driverOf, type Driver } from '../../../shared/database/connect.js';
import type { Database } from '../../../shared/database/schema.js';
import { storableRecords } from './moves.js';
import type { FleetStore } from './store.js';
import { postgresFleetStore } from './store-postgres.js';
import { sqliteFleetStore } from './store-sqlite.js';

/** The FleetStore of a driver: the one place that looks at which engine it is. */
export function fleetStoreOn(driver: Driver): FleetStore {
  return driver.engine === 'sqlite' ? sqliteFleetStore(driver.file) : postgresFleetStore(driver.pool);
}

const stores = new WeakMap<Kysely<Database>, FleetStore>();

/** The FleetStore of a database opened by openDatabase, made on first use. */
export function fleetStoreOf(db: Kysely<Database>): FleetStore {
  let store = stores.get(db);
  if (!store) {
    store = fleetStoreOn(driverOf(db));
    stores.set(db, store);
  }
  return store;
}

/** Writes one flush through the database's FleetStore; an empty flush touches nothing. */
export async function writeBatch(db: Kysely<Database>, heartbeats: readonly HeartbeatRecord[], reports: readonly ReportRecord[]): Promise<void> {
  if (heartbeats.length === 0 && reports.length === 0) return;
  await fleetStoreOf(db).writeBatch(...storableRecords(heartbeats, reports));
}
