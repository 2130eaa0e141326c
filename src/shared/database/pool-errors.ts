import type pg from 'pg';

// pg-pool listens for the errors of the clients it holds idle, and stops listening while one
// is checked out (a Kysely query, a fleet flush, a cluster lock held for a whole generation).
// A connection lost then makes the client emit 'error' with nobody listening, which Node
// throws: the whole actor thread died with it, and a database outage of a few seconds used up
// the supervisor's restarts and stopped the server (docs/scaling.md promises it keeps serving).
// The error of a checked-out client also rejects the query in flight, which reports it, and the
// pool drops the broken client when it is released; so both listeners only keep the thread up.

/** The pool, with every error of its connections left to the query that meets it. */
export function withQuietClientErrors(pool: pg.Pool): pg.Pool {
  pool.on('error', () => undefined); // an idle client's error; the next use reports it
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
