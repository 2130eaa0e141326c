import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../../shared/database/schema.js';

// The tracks of a cluster in PostgreSQL (docs/scaling.md): one row per track holding its JSON
// record, and three meta rows. Every change runs in one transaction under a cluster-wide
// advisory lock, bumps `revision` and notifies TRACKS_CHANNEL, so that each replica reloads
// its in-memory table; a replica that missed a notification sees the revision move at its
// next periodic resync.

/** The NOTIFY channel of track changes; the payload is the new revision. */
export const TRACKS_CHANNEL = 'updater_tracks';
/** Serializes every change of the tracks across the cluster (pg_advisory_xact_lock key). */
export const TRACKS_LOCK_KEY = 0x7570_6474; // "updt"

export interface StoredTracks {
  readonly revision: number;
  readonly default: string;
  readonly configDefault: string;
  /** Track key → its JSON record, ordered by key. */
  readonly docs: ReadonlyMap<string, string>;
}

export const EMPTY_TRACKS: StoredTracks = { revision: 0, default: '', configDefault: '', docs: new Map() };

type Db = Kysely<Database> | Transaction<Database>;

export async function readRevision(db: Db): Promise<number> {
  const row = await db.selectFrom('cluster_meta').select('value').where('key', '=', 'revision').executeTakeFirst();
  return row ? Number(row.value) : 0;
}

export async function readTracks(db: Db): Promise<StoredTracks> {
  const meta = new Map((await db.selectFrom('cluster_meta').select(['key', 'value']).execute()).map((r) => [r.key, r.value]));
  const rows = await db.selectFrom('cluster_tracks').select(['artifact', 'doc']).orderBy('artifact').execute();
  return {
    revision: Number(meta.get('revision') ?? 0),
    default: meta.get('default') ?? '',
    configDefault: meta.get('config_default') ?? '',
    docs: new Map(rows.map((r) => [r.artifact, r.doc])),
  };
}

/** Takes the cluster-wide lock of track changes until the transaction ends. */
export async function lockTracks(trx: Transaction<Database>): Promise<void> {
  await sql`select pg_advisory_xact_lock(${TRACKS_LOCK_KEY})`.execute(trx);
}

/**
 * Writes what differs between `before` (read under the lock) and `after`; bumps the revision
 * and notifies only when something changed. Returns the new revision.
 */
export async function writeTrackChanges(trx: Transaction<Database>, before: StoredTracks, after: Omit<StoredTracks, 'revision'>): Promise<number> {
  let changed = false;
  for (const [artifact, doc] of after.docs) {
    if (before.docs.get(artifact) === doc) continue;
    changed = true;
    await trx.insertInto('cluster_tracks').values({ artifact, doc })
      .onConflict((oc) => oc.column('artifact').doUpdateSet({ doc })).execute();
  }
  const gone = [...before.docs.keys()].filter((artifact) => !after.docs.has(artifact));
  if (gone.length > 0) {
    changed = true;
    await trx.deleteFrom('cluster_tracks').where('artifact', 'in', gone).execute();
  }
  if (after.default !== before.default || after.configDefault !== before.configDefault) changed = true;
  if (!changed) return before.revision;
  const revision = before.revision + 1;
  for (const [key, value] of [['default', after.default], ['config_default', after.configDefault], ['revision', String(revision)]] as const) {
    await trx.insertInto('cluster_meta').values({ key, value }).onConflict((oc) => oc.column('key').doUpdateSet({ value })).execute();
  }
  // Delivered at commit, to every listening replica (this one included).
  await sql`select pg_notify(${TRACKS_CHANNEL}, ${String(revision)})`.execute(trx);
  return revision;
}
