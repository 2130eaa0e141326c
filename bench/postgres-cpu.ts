import { readdirSync, readFileSync } from 'node:fs';

// The CPU a PostgreSQL server on this machine spends: its processes, the postmaster and its
// children (backends, WAL writer, checkpointer, autovacuum), read from /proc. With SQLite the
// database's work is in the server's own process; with PostgreSQL it is here, and a bench that
// compares the two engines says so. A server on another machine has nothing here to read.

/** The fields of /proc/PID/stat after the command (whose name may hold spaces and parentheses). */
function statFields(pid: string): string[] {
  return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
}

/** CPU seconds (user and system) of `postmaster` and its children, as the kernel has counted them so far. */
export function postgresCpuSeconds(postmaster: string): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const fields = statFields(pid);
      if (pid === postmaster || fields[1] === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile
    }
  }
  return ticks / 100;
}

interface Queryable {
  query(text: string): Promise<{ rows: unknown[] }>;
}

/**
 * The postmaster's pid: the parent of this connection's backend, when that backend is a
 * `postgres` process of this machine. Undefined for a server elsewhere, whose backend's pid
 * means nothing here (or names another program).
 */
export async function postmasterOf(connection: Queryable): Promise<string | undefined> {
  const backend = String(((await connection.query('select pg_backend_pid() as pid')).rows[0] as { pid: number }).pid);
  try {
    if (readFileSync(`/proc/${backend}/comm`, 'utf8').trim() !== 'postgres') return undefined;
    return statFields(backend)[1];
  } catch {
    return undefined;
  }
}
