import { createHash } from 'node:crypto';
import type pg from 'pg';
import { withQuietClientErrors } from './pool-errors.js';

// Cluster-wide mutual exclusion with PostgreSQL session advisory locks (docs/scaling.md). A
// lock is held on one pooled connection for as long as the work runs; if the replica dies,
// its connection closes and PostgreSQL releases the lock, so another replica can take the work
// over. Nothing is written to any table.

/** Namespaces (the first key of the two-key advisory lock): one per kind of work. */
export const LOCK_SPACE = {
  derivedFile: 0x7570_6466, // "updf": one delta or compressed full file
  retentionSweep: 0x7570_7377, // "upsw": the retention sweep
  webhookSender: 0x7570_7768, // "upwh": a round of the webhook sender
} as const;

export type Release = () => Promise<void>;

/** The second key: the first 4 bytes of the SHA-256 of the name (a collision only serializes two names). */
function nameKey(name: string): number {
  return createHash('sha256').update(name).digest().readInt32BE(0);
}

export class ClusterLocks {
  /**
   * pg is loaded here, not at the top: a thread that never locks (every single-server
   * configuration) is spared its start-up (pg builds a fetch Response to tell Cloudflare
   * Workers from Node, which loads undici: tens of ms on each actor thread).
   */
  private readonly pool: Promise<pg.Pool>;

  constructor(url: string, maxConnections: number) {
    this.pool = import('pg').then(({ default: pg }) =>
      withQuietClientErrors(new pg.Pool({ connectionString: url, max: maxConnections, connectionTimeoutMillis: 3_000, keepAlive: true })),
    );
  }

  /**
   * Tries the lock of `name` once. Resolves to its release, or to undefined when another
   * replica holds it; rejects when the database cannot be reached.
   */
  async tryLock(space: number, name: string): Promise<Release | undefined> {
    const client = await (await this.pool).connect();
    const key = nameKey(name);
    let held: boolean;
    try {
      held = (await client.query<{ held: boolean }>('select pg_try_advisory_lock($1, $2) as held', [space, key])).rows[0]!.held;
    } catch (err) {
      client.release(err as Error);
      throw err;
    }
    if (!held) {
      client.release();
      return undefined;
    }
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      try {
        await client.query('select pg_advisory_unlock($1, $2)', [space, key]);
        client.release();
      } catch (err) {
        // The connection is gone, and the lock with it.
        client.release(err as Error);
      }
    };
  }

  async notify(channel: string, payload: string): Promise<void> {
    await (await this.pool).query('select pg_notify($1, $2)', [channel, payload]);
  }

  async close(): Promise<void> {
    await (await this.pool).end();
  }
}
