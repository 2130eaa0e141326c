import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import t, { type Test } from 'tap';
import { ClusterLocks, LOCK_SPACE } from '../../../src/shared/database/cluster-lock.js';
import { driverOf, openDatabase } from '../../../src/shared/database/connect.js';
import { createTestDatabase } from '../../helpers/databases.js';

// The database goes away while a connection is checked out of a pool (a query, a fleet flush,
// a cluster lock held through a generation). pg-pool stops listening for that client's errors
// while it is out, and an 'error' event nobody listens for is thrown: before withQuietClientErrors
// (src/shared/database/pool-errors.ts) this test process died here, as the fleet actor's thread
// did in cluster-faults.test.ts, until the supervisor gave up on it and stopped the server.

async function freshPostgres(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'updater-pool-errors-'));
  const target = await createTestDatabase('postgres', dir);
  t.teardown(async () => {
    await target.drop();
    await rm(dir, { recursive: true, force: true });
  });
  return target.location;
}

/** Ends every other connection to the database at `location`, as a lost server or network does. */
async function terminateOthers(location: string): Promise<number> {
  const admin = new pg.Client({ connectionString: location });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ ended: boolean }>(
      'select pg_terminate_backend(pid) as ended from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
    return rows.filter((r) => r.ended).length;
  } finally {
    await admin.end();
  }
}

t.test('a connection lost while checked out: its next query reports it, nothing is thrown, the pool goes on', async (t) => {
  const location = await freshPostgres(t);
  const opened = await openDatabase(location);
  t.teardown(() => opened.close());
  const driver = driverOf(opened.db);
  if (driver.engine !== 'postgres') throw new Error('expected PostgreSQL');
  const client = await driver.pool.connect();
  const ended = new Promise((resolve) => client.once('end', resolve));
  t.ok((await terminateOthers(location)) >= 1, 'the checked-out connection was ended by the server');
  await ended; // the client has seen its connection go, and emitted its error first
  await t.rejects(client.query('select 1'), 'the client reports the loss to the next query on it');
  client.release(new Error('connection lost'));
  t.equal((await sql<{ one: number }>`select 1 as one`.execute(opened.db)).rows[0]?.one, 1, 'the next query gets a new connection');
});

t.test('a cluster lock whose connection is lost: the lock goes with it, and its release resolves', async (t) => {
  const location = await freshPostgres(t);
  const locks = new ClusterLocks(location, 2);
  const other = new ClusterLocks(location, 2);
  t.teardown(async () => {
    await locks.close();
    await other.close();
  });
  const release = await locks.tryLock(LOCK_SPACE.derivedFile, 'a-file');
  t.ok(release, 'the lock is taken');
  t.equal(await other.tryLock(LOCK_SPACE.derivedFile, 'a-file'), undefined, 'and held against another replica');
  t.ok((await terminateOthers(location)) >= 1, 'the connections are ended by the server');
  // PostgreSQL releases a session's advisory locks when the session ends.
  let taken: Awaited<ReturnType<ClusterLocks['tryLock']>>;
  for (let i = 0; i < 50 && !(taken = await other.tryLock(LOCK_SPACE.derivedFile, 'a-file').catch(() => undefined)); i++) {
    await new Promise((r) => setTimeout(r, 20));
  }
  t.ok(taken, 'another replica can take the lock');
  await taken!();
  await release!(); // its unlock query meets the dead connection, and the error stays inside
  t.pass('the holder\'s release resolved, and nothing was thrown');
});
