import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterLocks, LOCK_SPACE } from '../../shared/database/cluster-lock.js';
import type { Logger } from '../../shared/logger.js';

// Cluster mode: the retention sweep runs on one replica at a time. Each replica's timer fires
// on its own schedule; a sweep first takes the cluster-wide sweep lock, waiting while another
// replica sweeps (that sweep sees the same tracks and the same shared directory, so the wait
// is short and the second sweep finds little to do). A replica that dies mid-sweep drops its
// connection and with it the lock.

const WAIT_POLL_MS = 500;
/** Past this, a sweep runs without the lock: removal of an already removed file is harmless. */
const WAIT_LIMIT_MS = 10 * 60_000;

export interface SweepLeadership {
  run<T>(sweep: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** Undefined on a single node: one sweeper, no lock to take. */
export function sweepLeadership(config: { readonly cluster: boolean; readonly database: string }, log: Logger): SweepLeadership | undefined {
  if (!config.cluster) return undefined;
  const locks = new ClusterLocks(config.database, 1);
  return {
    async run(sweep) {
      const deadline = Date.now() + WAIT_LIMIT_MS;
      for (;;) {
        let release;
        try {
          release = await locks.tryLock(LOCK_SPACE.retentionSweep, 'sweep');
        } catch (err) {
          log.warn({ err }, 'cannot take the cluster sweep lock (database unreachable); sweeping without it');
          return sweep();
        }
        if (release) {
          try {
            return await sweep();
          } finally {
            await release();
          }
        }
        if (Date.now() > deadline) {
          log.warn('another replica held the sweep lock for too long; sweeping without it');
          return sweep();
        }
        log.debug('another replica is sweeping; waiting for it');
        await sleep(WAIT_POLL_MS);
      }
    },
    close: () => locks.close(),
  };
}
