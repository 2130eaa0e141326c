import { readFileSync } from 'node:fs';
import t from 'tap';
import { postgresCpuSeconds, postmasterOf } from '../../bench/postgres-cpu.js';
import { TEST_PG_URL, withConnection } from '../helpers/databases.js';

// The heartbeat bench reads PostgreSQL's CPU beside the server's (bench/postgres-cpu.ts). Read
// from the wrong processes, its row would charge the database with another program's CPU, or
// with none.

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

t.test("finds a local server's postmaster and counts what its backend spends", async (t) => {
  // UPDATER_TEST_PG may name a server elsewhere, whose processes this machine cannot read.
  if (!LOCAL_HOSTS.has(new URL(TEST_PG_URL).hostname)) return t.pass('not checked: the tests\' PostgreSQL is on another machine');
  const postmaster = await withConnection(TEST_PG_URL, postmasterOf);
  if (postmaster === undefined) return t.fail('no postmaster found for a server on this machine');
  t.equal(readFileSync(`/proc/${postmaster}/comm`, 'utf8').trim(), 'postgres');
  await withConnection(TEST_PG_URL, async (client) => {
    t.equal(await postmasterOf(client), postmaster, 'every connection has the one postmaster');
    const before = postgresCpuSeconds(postmaster);
    // Some tenths of a second of the backend's CPU, and none of this process's.
    await client.query('select count(*) from generate_series(1, 2000000)');
    t.ok(postgresCpuSeconds(postmaster) - before >= 0.05, 'the backend\'s work is counted');
  });
});

t.test('a backend pid that names no postgres process here gives no postmaster', async (t) => {
  const answering = (pid: number) => ({ query: async () => ({ rows: [{ pid }] }) });
  t.equal(await postmasterOf(answering(process.pid)), undefined, 'this node process');
  // Above Linux's largest pid_max (2^22): no such process.
  t.equal(await postmasterOf(answering(2 ** 22 + 1)), undefined, 'no process at all');
});
