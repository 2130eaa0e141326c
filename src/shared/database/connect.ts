import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import type pg from 'pg';
import { UpdaterError } from '../errors.js';
import { engineOf, redactDatabaseUrl } from './location.js';
import { migrateToLatest } from './migrations.js';
import { withQuietClientErrors } from './pool-errors.js';
import type { Database, Engine } from './schema.js';

// One query layer over two engines: embedded SQLite (a file, the default) or PostgreSQL
// (a postgres:// URL). Whoever opens the database runs the migrations before any query.

/** SQLite's page cache, in KiB: part of the memory bound (docs/memory.md). */
export const SQLITE_PAGE_CACHE_KIB = 16_000;

export interface FleetDatabase {
  readonly db: Kysely<Database>;
  readonly engine: Engine;
  close(): Promise<void>;
}

/**
 * The driver under a Kysely instance: the fleet actor's FleetStore (src/actors/fleet/inventory/store.ts) talks to it
 * directly, a prepared statement per row on SQLite and array parameters on PostgreSQL, which
 * costs a fraction of compiling the same upserts through the builder at every flush.
 */
export type Driver = { readonly engine: 'sqlite'; readonly file: BetterSqlite3.Database } | { readonly engine: 'postgres'; readonly pool: pg.Pool };

// Kysely-free, for actors that only need to know the engine (location.ts).
export { engineOf, redactDatabaseUrl };
// The one migration step the fleet's retention prune repeats after deleting devices.
export { recountVersions } from './migrations.js';

const drivers = new WeakMap<Kysely<Database>, Driver>();

/** The driver of a database opened by openDatabase. */
export function driverOf(db: Kysely<Database>): Driver {
  const driver = drivers.get(db);
  if (!driver) throw new TypeError('not a database opened by openDatabase');
  return driver;
}

/**
 * Opens the database, checks that it answers, and migrates it. An unreachable server or an
 * unopenable file is DATABASE_UNREACHABLE naming the `database` key; nothing is half-open.
 */
export async function openDatabase(location: string, options: { poolSize?: number } = {}): Promise<FleetDatabase> {
  const engine = engineOf(location);
  let db: Kysely<Database>;
  let driver: Driver;
  try {
    // Only the driver in use is loaded: each actor thread that opens a database pays for one.
    if (engine === 'postgres') {
      const { default: pg } = await import('pg');
      // pg returns int8 (bigint) as text, since JavaScript numbers stop at 2^53; seconds and
      // byte counts stay far below that, so they are read as numbers on both engines alike.
      pg.types.setTypeParser(20, (text: string) => Number(text));
      const pool = withQuietClientErrors(new pg.Pool({ connectionString: location, max: options.poolSize ?? 4, connectionTimeoutMillis: 5_000 }));
      db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
      driver = { engine, pool };
    } else {
      mkdirSync(dirname(location), { recursive: true });
      const { default: SqliteDatabase } = await import('better-sqlite3');
      const file = new SqliteDatabase(location);
      // WAL: readers (admin queries) never wait for the flush that writes; NORMAL sync is
      // durable against a process crash, which is what an inventory needs.
      file.pragma('journal_mode = WAL');
      file.pragma('synchronous = NORMAL');
      file.pragma('busy_timeout = 5000');
      // Stated rather than left to the driver's build (16,000 KiB today), because
      // docs/memory.md counts it in the memory bound.
      file.pragma(`cache_size = -${SQLITE_PAGE_CACHE_KIB}`);
      db = new Kysely<Database>({ dialect: new SqliteDialect({ database: file }) });
      driver = { engine, file };
    }
  } catch (err) {
    throw unreachable(location, err);
  }
  try {
    await sql`select 1`.execute(db);
  } catch (err) {
    await db.destroy().catch(() => undefined);
    throw unreachable(location, err);
  }
  await migrateToLatest(db as Kysely<unknown>, engine);
  drivers.set(db, driver);
  return { db, engine, close: () => db.destroy() };
}

function unreachable(location: string, err: unknown): UpdaterError {
  // The driver's own code (SQLITE_READONLY, ECONNREFUSED, …) is kept: callers tell a read-only disk from an unreachable server.
  const cause = (err as { code?: unknown }).code;
  return new UpdaterError('DATABASE_UNREACHABLE', `database: cannot open ${redactDatabaseUrl(location)}: ${(err as Error).message}`,
    { key: 'database', ...(typeof cause === 'string' ? { cause } : {}) });
}
