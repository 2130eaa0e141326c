import type { BinaryInfo } from '../../../messages/store.js';
import type { Config } from '../../../shared/config/types.js';
import type { Logger } from '../../../shared/logger.js';
import type { ClusterTracks } from './cluster-tracks.js';
import { storeCannotWrite, type StoreAccess } from '../store-access.js';
import type { TrackTable } from '../tracks.js';

// The start of a cluster replica (docs/scaling.md): take the tracks the database holds, store
// the configured binaries (in the shared store: another replica may have stored them already),
// then republish the configured tracks in one transaction. Configuration wins for the tracks
// it names at every replica's start, as it does on one node at every boot.

export interface ClusterBootDeps {
  readonly config: Config;
  readonly log: Logger;
  readonly tracks: TrackTable;
  readonly store: StoreAccess;
  readonly cluster: ClusterTracks;
  readonly configKeys: ReadonlySet<string>;
  /** Brings the table to the database (under the admin's table lock). */
  readonly sync: () => Promise<void>;
  /** Applies a change as one cluster-wide transaction. */
  readonly changeTable: (change: () => void) => Promise<void>;
  /** The default at boot, from what the database recorded (TrackAdmin's rule). */
  readonly bootDefault: (saved: { default: string; configDefault: string }) => string | undefined;
}

export async function bootClusterTracks(deps: ClusterBootDeps): Promise<void> {
  const { config, log, tracks, cluster } = deps;
  await deps.sync();
  const stored: (BinaryInfo | undefined)[] = [];
  for (const artifact of config.artifacts) {
    try {
      stored.push(await deps.store.registerBinary(artifact.binary));
    } catch (err) {
      if (!storeCannotWrite(err)) throw err;
      log.error({ err, artifact: artifact.key, binary: artifact.binary }, 'configured binary cannot be stored; the track serves what the database records, if anything');
      stored.push(undefined);
    }
  }
  await deps.changeTable(() => {
    const saved = { default: cluster.stored.default, configDefault: cluster.stored.configDefault };
    for (const track of tracks.all()) {
      if (track.source === 'config' && !deps.configKeys.has(track.key)) {
        log.info({ artifact: track.key }, 'track was declared by a configuration that no longer names it; dropped');
        tracks.remove(track.key);
      }
    }
    config.artifacts.forEach((artifact, i) => {
      const binary = stored[i];
      if (!binary) return;
      const { track, changed } = tracks.publish({ ...artifact, ...binary, source: 'config' }, config.retention.historyDepth);
      if (changed) log.info({ artifact: track.key, version: track.version, hash: track.hash }, 'configured track republished with a new target');
    });
    tracks.setDefault(deps.bootDefault(saved));
    tracks.inferDefault();
  });
  for (const track of tracks.all()) {
    deps.store.ensureFull(track.hash);
    log.info({ artifact: track.key, version: track.version, hash: track.hash, size: track.size, source: track.source }, 'track current');
  }
}
