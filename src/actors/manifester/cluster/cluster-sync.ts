import { openDatabase } from '../../../shared/database/connect.js';
import { PgListener } from '../../../shared/database/listener.js';
import { TRACKS_CHANNEL } from './track-queries.js';
import type { ActorContext } from '../../runtime.js';
import { ClusterTracks } from './cluster-tracks.js';
import type { TrackTable } from '../tracks.js';

// Keeps a replica's tracks current in cluster mode: a LISTEN connection reloads them when
// another replica commits a change (within a second), and a periodic resync repairs a missed
// notification. Neither runs on a heartbeat's path: heartbeats read the in-memory table only.

/** How often the revision is compared even without a notification. */
const RESYNC_MS = 5_000;

export interface ClusterSync {
  readonly tracks: ClusterTracks;
  start(): void;
  close(): Promise<void>;
}

/** Undefined on a single node (an SQLite database): the state file keeps the tracks there. */
export async function startClusterSync(
  ctx: ActorContext,
  tracks: TrackTable,
  changed: (keys: readonly string[]) => void,
  sync: () => Promise<void>,
): Promise<ClusterSync | undefined> {
  const { config } = ctx;
  if (!config.cluster) return undefined;
  // Migrates the schema too: whichever actor opens the database first applies the migrations.
  const opened = await openDatabase(config.database, { poolSize: 2 });
  const clusterTracks = new ClusterTracks({
    db: opened.db, location: config.database, tracks, configDefault: config.defaultArtifact ?? '', log: ctx.log, changed,
  });

  // Notifications that arrive during a reload are folded into one more reload after it.
  let running: Promise<void> | undefined;
  let again = false;
  const reload = (): void => {
    if (running) {
      again = true;
      return;
    }
    running = sync()
      .catch((err) => ctx.log.debug({ err }, 'could not reload the tracks from the database; the resync timer tries again'))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          reload();
        }
      });
  };

  const listener = new PgListener(config.database, [TRACKS_CHANNEL], {
    notify: reload,
    up: () => {
      clusterTracks.setReachable(true);
      reload();
    },
    down: () => clusterTracks.setReachable(false),
  }, ctx.log);
  let timer: NodeJS.Timeout | undefined;
  return {
    tracks: clusterTracks,
    start() {
      listener.start();
      timer = setInterval(reload, RESYNC_MS);
    },
    async close() {
      clearInterval(timer);
      await listener.close();
      await running;
      await opened.close();
    },
  };
}
