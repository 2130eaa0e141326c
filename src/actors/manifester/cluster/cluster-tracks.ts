import type { Kysely, Transaction } from 'kysely';
import { redactDatabaseUrl } from '../../../shared/database/connect.js';
import type { Database } from '../../../shared/database/schema.js';
import { EMPTY_TRACKS, lockTracks, readRevision, readTracks, writeTrackChanges, type StoredTracks } from './track-queries.js';
import { UpdaterError, isUpdaterError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import { STATE_FORMAT, STATE_VERSION, decodeState, trackRecord, type PersistedState } from '../state-file.js';
import type { Track, TrackTable } from '../tracks.js';

// The manifester's tracks in cluster mode (database: postgres://…). The database holds them;
// the TrackTable is this replica's in-memory copy, which answers every heartbeat. A change
// runs in one transaction under a cluster-wide lock: read what is stored, bring the table to
// it, apply the change to the table, write back what differs. Other replicas reload when the
// notification of the new revision arrives (or at their periodic resync).
//
//   admin write ─▶ BEGIN; lock; read ─▶ table := stored ─▶ change(table) ─▶ write diff; NOTIFY; COMMIT
//   NOTIFY / resync timer ─▶ revision moved? ─▶ read ─▶ table := stored ─▶ changed(keys)

export type DatabaseCondition = 'ok' | 'unreachable';

export interface ClusterTracksDeps {
  readonly db: Kysely<Database>;
  readonly location: string;
  readonly tracks: TrackTable;
  /** The configuration's default_artifact, recorded so that a later edit of it is noticed. */
  readonly configDefault: string;
  readonly log: Logger;
  /** Told after the table took tracks that another replica changed (keys added, changed or removed). */
  readonly changed: (keys: readonly string[]) => void;
}

export class ClusterTracks {
  private applied: StoredTracks = EMPTY_TRACKS;
  private reachable = true;

  constructor(private readonly deps: ClusterTracksDeps) {}

  get condition(): DatabaseCondition {
    return this.reachable ? 'ok' : 'unreachable';
  }

  /** What the last read or write stored (default and config_default matter at boot). */
  get stored(): StoredTracks {
    return this.applied;
  }

  /** Marks the database as lost or back (the listener sees it first). */
  setReachable(reachable: boolean): void {
    if (reachable === this.reachable) return;
    this.reachable = reachable;
    if (reachable) this.deps.log.info('the database is reachable again');
    else this.deps.log.error({ database: redactDatabaseUrl(this.deps.location) }, 'the database cannot be reached; devices are answered from memory, admin writes are refused');
  }

  /** Brings the table to what the database holds, when its revision moved (or always, with `force`). */
  async refresh(force = false): Promise<void> {
    await this.guard(async () => {
      if (!force && (await readRevision(this.deps.db)) === this.applied.revision) return;
      this.apply(await readTracks(this.deps.db));
    });
  }

  /**
   * Applies a change to the tracks as one cluster-wide transaction; the table follows the
   * database. `first`, when given, runs before the change, under the lock: a check that a
   * change made elsewhere at the same moment must not slip past (the groups a publish names).
   */
  change<T>(change: () => T, first?: () => Promise<void>): Promise<T> {
    return this.locked(async (trx, read) => {
      await first?.();
      const result = change();
      const after = { default: this.deps.tracks.default ?? '', configDefault: this.deps.configDefault, docs: encodeTracks(this.deps.tracks.all()) };
      const revision = await writeTrackChanges(trx, read, after);
      this.applied = { ...after, revision };
      return result;
    });
  }

  /**
   * Runs `act` with the table brought to the database and the cluster-wide lock held until it
   * returns: no replica changes a track meanwhile. It writes no track (a group's delete, which
   * no rollout may name, is acted on so).
   */
  hold<T>(act: () => Promise<T>): Promise<T> {
    return this.locked(() => act());
  }

  /** One transaction under the cluster-wide lock, the table brought to what it read. */
  private locked<T>(body: (trx: Transaction<Database>, read: StoredTracks) => Promise<T>): Promise<T> {
    let read: StoredTracks | undefined;
    return this.guard(() => this.deps.db.transaction().execute(async (trx) => {
      await lockTracks(trx);
      const stored = await readTracks(trx);
      read = stored;
      this.apply(stored);
      return body(trx, stored);
    })).catch((err) => {
      // Nothing was written: the table goes back to what the database holds.
      if (read) {
        this.applied = EMPTY_TRACKS;
        this.apply(read);
      }
      throw err;
    });
  }

  /** Runs a database call; a failure that is not ours is the database lost (DATABASE_UNREACHABLE). */
  private async guard<T>(run: () => Promise<T>): Promise<T> {
    try {
      const result = await run();
      this.setReachable(true);
      return result;
    } catch (err) {
      if (isUpdaterError(err) && err.code !== 'INTERNAL') throw err;
      if (isConnectionLoss(err)) this.setReachable(false);
      throw new UpdaterError('DATABASE_UNREACHABLE', `the database cannot be reached (${(err as Error).message}); the change was not applied`);
    }
  }

  private apply(stored: StoredTracks): void {
    const { tracks } = this.deps;
    const state = decodeStored(stored);
    const before = new Map(tracks.all().map((t) => [t.key, JSON.stringify(trackRecord(t))]));
    const defaultBefore = tracks.default;
    tracks.replaceAll(state.tracks, state.default === '' ? undefined : state.default);
    const changed = [...stored.docs.keys()].filter((key) => before.get(key) !== stored.docs.get(key));
    for (const key of before.keys()) if (!stored.docs.has(key)) changed.push(key);
    this.applied = stored;
    if (changed.length > 0 || defaultBefore !== tracks.default) this.deps.changed(changed);
  }
}

export function encodeTracks(tracks: readonly Track[]): Map<string, string> {
  return new Map([...tracks].sort((a, b) => (a.key < b.key ? -1 : 1)).map((t) => [t.key, JSON.stringify(trackRecord(t))]));
}

/** Validates the stored rows with the state file's decoder: a row that does not pass is never served. */
function decodeStored(stored: StoredTracks): PersistedState {
  const doc = {
    format: STATE_FORMAT, version: STATE_VERSION, default: stored.default, config_default: stored.configDefault,
    tracks: [...stored.docs.values()].map((text) => JSON.parse(text) as unknown),
  };
  try {
    return decodeState(doc, '(database)');
  } catch (err) {
    throw new UpdaterError('STATE_CORRUPT', `the tracks in the database do not pass validation: ${(err as Error).message}`);
  }
}

/** A driver or socket error (as opposed to a query PostgreSQL refused). */
function isConnectionLoss(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  // SQLSTATE class 08 (connection exception), 57P0x (server shutting down), or a Node socket error.
  if (typeof code === 'string' && (/^08/.test(code) || /^57P0/.test(code) || /^E[A-Z]+$/.test(code))) return true;
  return /timeout|terminat|connect|closed|ended/i.test((err as Error)?.message ?? '');
}
