import type { BinaryInfo } from '../../messages/store.js';
import type { Config } from '../../shared/config/types.js';
import type { Logger } from '../../shared/logger.js';
import { readState, sameState, type PersistedState } from './state-file.js';
import { storeCannotWrite, type StoreAccess } from './store-access.js';
import type { Track, TrackTable } from './tracks.js';

// The start of a single node's tracks (a cluster replica's is cluster/cluster-boot.ts): restore
// what the state file records, then republish every configured track (configuration wins for
// the tracks it names), then record the result.

export interface BootDeps {
  readonly config: Config;
  readonly log: Logger;
  readonly tracks: TrackTable;
  readonly store: StoreAccess;
  readonly onTracksChanged: (tracks: readonly Track[]) => void;
  /** The tracks the configuration declares. */
  readonly configKeys: ReadonlySet<string>;
  /** The configuration's default track ('' for none). */
  readonly configDefault: string;
  /** Records the table in the state file (track-record.ts). */
  readonly persist: () => Promise<void>;
}

export async function bootFromStateFile(deps: BootDeps): Promise<void> {
  const { config, log, tracks } = deps;
  const depth = config.retention.historyDepth;
  const saved = config.store.stateFile ? await readState(config.store.stateFile) : undefined;
  for (const track of saved?.tracks ?? []) {
    if (track.source === 'config' && !deps.configKeys.has(track.key)) {
      log.info({ artifact: track.key }, 'track was declared by a configuration that no longer names it; dropped');
      continue;
    }
    // A configured track is republished from its file just below; an API track has only the
    // store to come back from, so its binary must be there.
    // If it is not (lost, or moved aside at start because its bytes did not fit its name),
    // the track stays listed and devices get retry_after, never a wrong file, until the
    // operator publishes it again.
    if (track.source === 'api' && !deps.store.holdsBinary(track.hash)) {
      log.error({ artifact: track.key, hash: track.hash }, 'store.state_file records a track whose binary the store does not hold; publish it again');
    }
    tracks.restore({ ...track, history: track.history.slice(0, depth) });
  }
  for (const artifact of config.artifacts) {
    const recorded = tracks.get(artifact.key);
    let binary: BinaryInfo;
    try {
      binary = await deps.store.registerBinary(artifact.binary);
    } catch (err) {
      // A full or read-only store must not take device service down: serve what it holds.
      if (!storeCannotWrite(err)) throw err;
      log.error({ err, artifact: artifact.key, binary: artifact.binary, serving: recorded?.hash ?? null },
        'configured binary cannot be stored; the track serves what the state file recorded, if anything, until a reload after the store recovers');
      continue;
    }
    const { track, changed } = tracks.publish({ ...artifact, ...binary, source: 'config' }, depth);
    if (changed && recorded && recorded.hash !== track.hash) {
      // Typically a build published through the API onto this configured track: the rule
      // (configuration wins) stands, but devices may now be offered an older build.
      log.warn({ artifact: track.key, replaced: { version: recorded.version, hash: recorded.hash }, by: { version: track.version, hash: track.hash } },
        `configuration replaces the recorded target of ${track.key}: version ${recorded.version} gives way to the configured ${track.version} (an API publish onto a configured track lasts until the next start)`);
    } else if (changed) {
      log.info({ artifact: track.key, version: track.version, hash: track.hash }, 'configured track republished with a new target');
    }
  }
  tracks.setDefault(bootDefault(tracks, deps.configDefault, saved));
  tracks.inferDefault();
  // Rewritten only when it changed: a start on a full or read-only disk needs no write.
  const now: PersistedState = { default: tracks.default ?? '', configDefault: deps.configDefault, tracks: tracks.all() };
  if (!saved || !sameState(saved, now)) {
    try {
      await deps.persist();
    } catch (err) {
      // Configuration is republished at every boot, so what a restart brings back is this table.
      if (!storeCannotWrite(err)) throw err;
      log.error({ err }, 'store.state_file cannot be written; serving the configured tracks read-only');
    }
  }
  for (const track of tracks.all()) {
    deps.store.ensureFull(track.hash);
    log.info({ artifact: track.key, version: track.version, hash: track.hash, size: track.size, source: track.source }, 'track current');
  }
  deps.onTracksChanged(tracks.all());
}

/**
 * The default at boot: the one the state file (or the database) records, unless the
 * configuration now names another default than when it was recorded (the operator edited it:
 * it wins).
 */
export function bootDefault(tracks: TrackTable, configDefault: string, saved: Pick<PersistedState, 'default' | 'configDefault'> | undefined): string | undefined {
  const exists = (key: string | undefined) => (key && tracks.get(key) ? key : undefined);
  if (saved && saved.configDefault === configDefault && exists(saved.default)) return saved.default;
  return exists(configDefault) ?? exists(saved?.default);
}
