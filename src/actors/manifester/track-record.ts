import type { Config } from '../../shared/config/types.js';
import { storeWriteError } from '../../shared/durable-file.js';
import { UpdaterError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { ClusterTracks } from './cluster/cluster-tracks.js';
import { SerialQueue } from './serial.js';
import { writeState, type PersistedState } from './state-file.js';
import { storeCannotWrite } from './store-access.js';
import type { Track, TrackTable } from './tracks.js';

// Where the track table is recorded, one change at a time under the table lock: the state
// file on a single node, the database in a cluster (cluster/cluster-tracks.ts). The table
// changes only once the record holds the change.

export interface RecordDeps {
  readonly config: Config;
  readonly log: Logger;
  readonly tracks: TrackTable;
  readonly onTracksChanged: (tracks: readonly Track[]) => void;
  readonly cluster?: ClusterTracks;
}

export class TrackRecorder {
  private readonly tableLock = new SerialQueue();

  constructor(private readonly deps: RecordDeps, private readonly configDefault: string) {}

  /** Cluster mode: brings the table to what the database holds (a notification, the resync timer, a reconnect). */
  sync(force = false): Promise<void> {
    const cluster = this.deps.cluster;
    if (!cluster) return Promise.resolve();
    return this.tableLock.run(() => cluster.refresh(force));
  }

  /**
   * Applies a change to the table and records it in the state file, under the table lock.
   * If the file cannot be written, the table is put back and the caller gets the error:
   * what answers devices never differs from what a restart would bring back. `first`, when
   * given, runs under the same lock before the change (in a cluster, the cluster-wide one too):
   * a check nothing may change between it and the change.
   */
  change<T>(change: () => T, first?: () => Promise<void>): Promise<T> {
    const cluster = this.deps.cluster;
    if (cluster) {
      return this.tableLock.run(async () => {
        const result = await cluster.change(change, first);
        this.deps.onTracksChanged(this.deps.tracks.all());
        return result;
      });
    }
    return this.tableLock.run(async () => {
      await first?.();
      const { tracks } = this.deps;
      const before = { tracks: tracks.all(), default: tracks.default };
      const result = change();
      try {
        await this.persist();
      } catch (err) {
        tracks.replaceAll(before.tracks, before.default);
        throw err;
      }
      this.deps.onTracksChanged(tracks.all());
      return result;
    });
  }

  /**
   * Runs `act` under the table lock (in a cluster, the cluster-wide one too, with the table
   * brought to the database first), so no track changes until it returns; it changes none.
   */
  hold<T>(act: () => Promise<T>): Promise<T> {
    const cluster = this.deps.cluster;
    return this.tableLock.run(() => (cluster ? cluster.hold(act) : act()));
  }

  async persist(): Promise<void> {
    const path = this.deps.config.store.stateFile;
    if (!path) return;
    const state: PersistedState = { default: this.deps.tracks.default ?? '', configDefault: this.configDefault, tracks: this.deps.tracks.all() };
    try {
      await writeState(path, state);
    } catch (err) {
      this.deps.log.error({ err, path }, 'could not write store.state_file');
      const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      const mapped = storeWriteError(err, `store.state_file ${path}`);
      if (storeCannotWrite(mapped)) throw new UpdaterError((mapped as UpdaterError).code, `store.state_file ${path} could not be written (${reason}); the change was not applied`);
      throw new UpdaterError('STATE_WRITE_FAILED', `store.state_file ${path} could not be written (${reason}); the change was not applied`);
    }
  }
}
