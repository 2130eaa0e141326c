import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterLocks, LOCK_SPACE } from '../../shared/database/cluster-lock.js';
import { PgListener } from '../../shared/database/listener.js';
import { UpdaterError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';

// The store-keeper's part of cluster mode (docs/scaling.md): every replica writes the same
// shared store directory, so a derived file is generated under a cluster-wide lock on its
// name, and a retention removal is announced for the other replicas to drop from their index.
//
//   ensureDelta ─▶ on disk already? ─▶ adopt (verify, index)
//               └▶ try lock(name) ─ got it ─▶ on disk now? adopt : generate ─▶ unlock
//                                 └ held elsewhere ─▶ wait POLL_MS, look again
//
// A replica killed mid-generation loses its connection, PostgreSQL releases its lock, and the
// next replica that asks takes the job over (removing the dead one's scratch directory).

/** NOTIFY channel of files a retention sweep removed; payload `{"derived":[…],"binaries":[…]}`. */
export const STORE_CHANNEL = 'updater_store';
/** How often a replica waiting for another one's generation looks again. */
const POLL_MS = 250;
/** NOTIFY payloads must stay under 8000 bytes: names are announced in batches. */
const NAMES_PER_NOTIFY = 40;

export interface RemovedFiles {
  readonly derived: readonly string[];
  readonly binaries: readonly string[];
}

export class ClusterFiles {
  private readonly locks: ClusterLocks;
  private readonly listener: PgListener;
  private lockFailing = false;
  private closed = false;

  constructor(url: string, maxConnections: number, private readonly log: Logger, removedElsewhere: (files: RemovedFiles) => void) {
    this.locks = new ClusterLocks(url, maxConnections);
    this.listener = new PgListener(url, [STORE_CHANNEL], {
      notify: (_channel, payload) => {
        const files = parseRemoved(payload);
        if (files) removedElsewhere(files);
      },
      up: () => undefined,
      down: () => undefined,
    }, log);
  }

  start(): void {
    this.listener.start();
  }

  /**
   * Produces the file `name` once in the cluster: `find` returns it when it is already on
   * disk; `generate` runs only under the lock. Without the database, the file is generated
   * here (publishing never overwrites, so a second copy costs only the work).
   */
  async once<T>(name: string, find: () => Promise<T | undefined>, generate: () => Promise<T>): Promise<T> {
    for (;;) {
      const found = await find();
      if (found) return found;
      if (this.closed) throw new UpdaterError('SHUTTING_DOWN');
      let release;
      try {
        release = await this.locks.tryLock(LOCK_SPACE.derivedFile, name);
        this.lockFailing = false;
      } catch (err) {
        if (!this.lockFailing) this.log.warn({ err, file: name }, 'cannot take the cluster lock of a derived file (database unreachable); generating it here');
        this.lockFailing = true;
        return generate();
      }
      if (release) {
        try {
          return (await find()) ?? (await generate());
        } finally {
          await release();
        }
      }
      await sleep(POLL_MS);
    }
  }

  async announceRemoval(files: RemovedFiles): Promise<void> {
    const batches: RemovedFiles[] = [];
    for (let i = 0; i < files.derived.length; i += NAMES_PER_NOTIFY) batches.push({ derived: files.derived.slice(i, i + NAMES_PER_NOTIFY), binaries: [] });
    for (let i = 0; i < files.binaries.length; i += NAMES_PER_NOTIFY) batches.push({ derived: [], binaries: files.binaries.slice(i, i + NAMES_PER_NOTIFY) });
    try {
      for (const batch of batches) await this.locks.notify(STORE_CHANNEL, JSON.stringify(batch));
    } catch (err) {
      // The others find out when a download of the file fails to open; logged for the operator.
      this.log.warn({ err }, 'could not tell the other replicas about files the sweep removed');
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.listener.close();
    await this.locks.close();
  }
}

function parseRemoved(payload: string): RemovedFiles | undefined {
  try {
    const doc = JSON.parse(payload) as { derived?: unknown; binaries?: unknown };
    const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
    return { derived: strings(doc.derived), binaries: strings(doc.binaries) };
  } catch {
    return undefined;
  }
}
