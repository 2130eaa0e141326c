import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import type { Engine } from '../../src/shared/database/schema.js';

// Every database test runs on both engines: an SQLite file in the test's directory, and a
// PostgreSQL database of its own (created here, dropped at the end). The server is the
// machine's PostgreSQL 15, reached as the `updater` role (.ci/run creates it); UPDATER_TEST_PG
// points elsewhere.

export const TEST_PG_URL = process.env.UPDATER_TEST_PG ?? 'postgres://updater:updater@127.0.0.1:5432/postgres';

export interface TestDatabase {
  readonly engine: Engine;
  /** What the `database` key would hold. */
  readonly location: string;
  drop(): Promise<void>;
}

export const ENGINES: readonly Engine[] = ['sqlite', 'postgres'];

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_PG_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

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
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}
