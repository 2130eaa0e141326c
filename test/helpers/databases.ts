import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Database, Engine } from '../../src/shared/database/schema.js';
import { currentRunDir, POSTGRES_FILE, type RunPostgres } from './test-run.js';

// Every database test runs on both engines: an SQLite file in the test's directory, and a
// PostgreSQL database of its own (created here, dropped at the end), reached as the `updater`
// role (password `updater`, CREATEDB, pg_signal_backend). The server is UPDATER_TEST_PG when
// set; else, under tap, the run's own PostgreSQL 15 from npm (run-before.ts starts it);
// else (a test file or a bench run by hand) the machine's, on 127.0.0.1:5432.

function runPostgresUrl(): string | undefined {
  const dir = currentRunDir();
  if (dir === undefined) return undefined;
  try {
    return (JSON.parse(readFileSync(join(dir, POSTGRES_FILE), 'utf8')) as RunPostgres).url;
  } catch {
    return undefined;
  }
}

export const TEST_PG_URL = process.env.UPDATER_TEST_PG || runPostgresUrl() || 'postgres://updater:updater@127.0.0.1:5432/postgres';

export interface TestDatabase {
  readonly engine: Engine;
  /** What the `database` key would hold. */
  readonly location: string;
  drop(): Promise<void>;
}

export const ENGINES: readonly Engine[] = ['sqlite', 'postgres'];

// pg, kysely and the server's database modules are loaded when first used: a test file that
// only names a database for the servers it starts (the cluster and spawned-server tests) would
// spend about 0.4 s of CPU loading them one by one (kysely alone is some 400 modules) for nothing.
const openDatabase = async (location: string) => (await import('../../src/shared/database/connect.js')).openDatabase(location);

/** `fn` with one connection to the PostgreSQL database at `url`, closed again. */
export async function withConnection<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const admin = <T>(fn: (client: pg.Client) => Promise<T>): Promise<T> => withConnection(TEST_PG_URL, fn);

/** A fresh, empty database of the engine; `dir` holds the SQLite file. */
export async function createTestDatabase(engine: Engine, dir: string): Promise<TestDatabase> {
  if (engine === 'sqlite') {
    return { engine, location: join(dir, `fleet-${randomBytes(4).toString('hex')}.db`), drop: async () => undefined };
  }
  const name = `updater_t_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(TEST_PG_URL);
  url.pathname = `/${name}`;
  return {
    engine,
    location: url.toString(),
    drop: () => dropDatabase(name),
  };
}

const INSUFFICIENT_PRIVILEGE = '42501';

/**
 * FORCE ends the connections left to the database, but an autovacuum worker vacuuming it can only
 * be ended by a superuser or a member of `pg_signal_backend` (.ci/run grants it). Without that
 * grant, wait for the worker to finish rather than leave the database behind.
 */
async function dropDatabase(name: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== INSUFFICIENT_PRIVILEGE) throw err;
      if (Date.now() > deadline) {
        throw new Error(`dropping the test database ${name}: ${(err as Error).message} (grant pg_signal_backend to the test role)`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** A fresh database of the engine, opened, and dropped with its directory when `t` ends. */
export async function openTestDatabase(t: { teardown(fn: () => Promise<void>): void }, engine: Engine, prefix = 'updater-db-'): Promise<Kysely<Database>> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const target = await createTestDatabase(engine, dir);
  const { db, close } = await openDatabase(target.location);
  t.teardown(async () => {
    await close();
    await target.drop();
    await rm(dir, { recursive: true, force: true });
  });
  return db;
}

/**
 * The databases of `replicas` fleet actors sharing one fresh database of the engine, each with
 * its own connection (a pool on PostgreSQL), dropped when `t` ends. SQLite is one server's
 * database: one connection, whatever `replicas` asks.
 */
export async function openTestReplicas(t: { teardown(fn: () => Promise<void>): void }, engine: Engine, replicas: number, prefix = 'updater-db-'): Promise<Kysely<Database>[]> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const target = await createTestDatabase(engine, dir);
  const opened: Awaited<ReturnType<typeof openDatabase>>[] = [];
  t.teardown(async () => {
    for (const o of opened) await o.close();
    await target.drop();
    await rm(dir, { recursive: true, force: true });
  });
  for (let i = 0; i < (engine === 'sqlite' ? 1 : replicas); i++) opened.push(await openDatabase(target.location));
  return opened.map((o) => o.db);
}

/** PostgreSQL: the sessions of `db`'s database waiting for a lock (a test's way to know a transaction is held up where it means it to be). */
export async function lockWaiters(db: Kysely<Database>): Promise<number> {
  const { sql } = await import('kysely');
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(db);
  return rows[0]!.n;
}

/** Polls (each look a query or a check, not a sleep standing in for one) until `done` holds. */
export async function until(done: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await done())) await new Promise((resolve) => setTimeout(resolve, 10));
}
