import { randomBytes } from 'node:crypto';
import { sql, type Kysely, type Selectable } from 'kysely';
import type { DeviceAuthState, DevicePage, DeviceQuery, DeviceView, PreauthorizedDevice } from '../../../messages/fleet.js';
import type { AuthRequest } from '../../../shared/device-identity/auth-request.js';
import { deviceIdHash } from '../../../shared/device-identity/token.js';
import { UpdaterError } from '../../../shared/errors.js';
import type { Database, DeviceIdentitiesTable } from '../../../shared/database/schema.js';
import { writeLocked } from '../write-lock.js';

// Device identities in the fleet database: the enrollment decisions of docs/operations.md and
// the operator's calls. Device-facing (authenticate) and operator-facing (the rest) queries
// share the table; the token itself is minted by the caller (trust.ts holds the key).

type Db = Kysely<Database>;
type IdentityRow = Selectable<DeviceIdentitiesTable>;

export type Enrollment = 'open' | 'manual' | 'preauthorized';

/** devices.enrollment, max_pending and pending_ttl (seconds). */
export interface EnrollmentPolicy {
  readonly enrollment: Enrollment;
  readonly maxPending: number;
  readonly pendingTtl: number;
}

/**
 * The oldest created_at of a pending enrollment that still holds: one older has expired. An
 * expired one counts toward nothing and binds nothing, so an anonymous burst (or a squatter's
 * claim on a real device's id) lasts pending_ttl, not for ever.
 */
export const pendingSince = (policy: EnrollmentPolicy, now: number) => now - policy.pendingTtl;

/** What a successful auth request leads to, before a token is minted. */
export type AuthDecision = 'accepted' | 'pending';

/**
 * Runs inside the transaction that makes a new device pending (its first request under manual
 * enrollment), so what it writes (the `updater.device.pending` event) is committed with the row
 * or not at all: exactly once per enrollment, never for the pending device's later requests.
 */
export type OnNewPending = (tx: Kysely<Database>, request: AuthRequest) => Promise<void>;

const TOKEN_KEY_NAME = 'device_token_mac';
/** Rows per statement of a bulk preauthorization (SQLite allows 32,766 parameters; 6 a row). */
const PREAUTHORIZE_CHUNK = 500;
/** The states a preauthorize replaces (with the operator's key). */
const OVERRIDDEN: DeviceAuthState[] = ['pending', 'rejected'];

/** The token MAC key: the first replica to start makes it, every one reads the same. */
export async function tokenKey(db: Db): Promise<Uint8Array> {
  await db.insertInto('device_auth_keys').values({ name: TOKEN_KEY_NAME, value: randomBytes(32).toString('base64') })
    .onConflict((oc) => oc.column('name').doNothing()).execute();
  const row = await db.selectFrom('device_auth_keys').select('value').where('name', '=', TOKEN_KEY_NAME).executeTakeFirstOrThrow();
  return new Uint8Array(Buffer.from(row.value, 'base64'));
}

/** Revocations whose tokens may still be alive (revoked at or after `since`). */
export async function revocations(db: Db, since: number): Promise<[string, number][]> {
  const rows = await db.selectFrom('device_revocations').select(['id_hash', 'revoked_at']).where('revoked_at', '>=', since).execute();
  return rows.map((r) => [r.id_hash, Number(r.revoked_at)]);
}

/**
 * Id hashes of the devices whose client certificates are refused: every rejected device, and
 * every deleted one (a revocation whose device has no identity any more) revoked at or after
 * `since`, as its tokens are.
 */
export async function certificateRefusals(db: Db, since: number): Promise<string[]> {
  const rejected = await db.selectFrom('device_identities').select('device_id').where('auth_state', '=', 'rejected').execute();
  const deleted = await db.selectFrom('device_revocations').select('id_hash').where('revoked_at', '>=', since)
    .where((eb) => eb.not(eb.exists(eb.selectFrom('device_identities').select('device_identities.device_id').whereRef('device_identities.device_id', '=', 'device_revocations.device_id'))))
    .execute();
  return [...rejected.map((r) => deviceIdHash(r.device_id)), ...deleted.map((r) => r.id_hash)];
}

/** Old revocations go once every token they could refuse has expired. */
export async function pruneRevocations(db: Db, before: number): Promise<void> {
  await db.deleteFrom('device_revocations').where('revoked_at', '<', before).execute();
}

async function revoke(db: Db, deviceId: string, now: number): Promise<void> {
  await db.insertInto('device_revocations').values({ id_hash: deviceIdHash(deviceId), device_id: deviceId, revoked_at: now })
    .onConflict((oc) => oc.column('id_hash').doUpdateSet({ revoked_at: now, device_id: deviceId })).execute();
}

/** Pending enrollments that have not expired (created at or after `since`). */
export async function pendingCount(db: Db, since: number): Promise<number> {
  const row = await db.selectFrom('device_identities').select((eb) => eb.fn.countAll<number>().as('n'))
    .where('auth_state', '=', 'pending').where('created_at', '>=', since).executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Deletes the expired pending enrollments (those created before `since`). */
export async function prunePending(db: Db, since: number): Promise<void> {
  await db.deleteFrom('device_identities').where('auth_state', '=', 'pending').where('created_at', '<', since).execute();
}

/**
 * The enrollment decision for a request whose signature and clock the front-end checked. The
 * timestamp must be newer than the last verified one of the device, in a conditional update, so
 * two copies of one request racing each other cannot both pass.
 */
export async function authenticate(
  db: Db, request: AuthRequest, policy: EnrollmentPolicy, now: number, onNewPending: OnNewPending,
): Promise<AuthDecision> {
  const row = await db.selectFrom('device_identities').selectAll().where('device_id', '=', request.deviceId).executeTakeFirst();
  if (!row) return enroll(db, request, policy, now, onNewPending);
  const since = pendingSince(policy, now);
  if (row.auth_state === 'pending' && Number(row.created_at) < since) {
    // Expired: as if it had never been. The condition keeps a row that became anything else
    // (accepted, or pending afresh) since it was read.
    await db.deleteFrom('device_identities').where('device_id', '=', request.deviceId)
      .where('auth_state', '=', 'pending').where('created_at', '<', since).execute();
    return enroll(db, request, policy, now, onNewPending);
  }
  if (row.auth_state === 'rejected') throw new UpdaterError('DEVICE_NOT_ACCEPTED', 'the device was rejected by an operator');
  if (row.public_key !== request.publicKey) throw new UpdaterError('DEVICE_KEY_MISMATCH');
  if (request.timestamp <= Number(row.last_auth_at)) {
    throw new UpdaterError('DEVICE_AUTH_FAILED', 'the timestamp is not newer than the device\'s last verified request (a replay?)', { reason: 'replay' });
  }
  const state = row.auth_state === 'preauthorized' ? 'accepted' : row.auth_state;
  const updated = await db.updateTable('device_identities')
    .set({ last_auth_at: request.timestamp, auth_state: state, updated_at: now })
    .where('device_id', '=', request.deviceId).where('public_key', '=', request.publicKey)
    .where('auth_state', '=', row.auth_state).where('last_auth_at', '<', request.timestamp)
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) !== 1) {
    throw new UpdaterError('DEVICE_AUTH_FAILED', 'the device\'s state changed during the request (a replay racing it?)', { reason: 'replay' });
  }
  return state;
}

async function enroll(db: Db, request: AuthRequest, policy: EnrollmentPolicy, now: number, onNewPending: OnNewPending): Promise<AuthDecision> {
  const { enrollment, maxPending } = policy;
  if (enrollment === 'preauthorized') throw new UpdaterError('DEVICE_NOT_ACCEPTED', 'enrollment is preauthorized and no operator added this device');
  const state: AuthDecision = enrollment === 'open' ? 'accepted' : 'pending';
  const since = pendingSince(policy, now);
  // While full, a burst is refused here, at the cost of one count each and no lock.
  if (state === 'pending' && (await pendingCount(db, since)) >= maxPending) throw new UpdaterError('DEVICE_PENDING_FULL');
  const insert = async (tx: Db) => {
    const row = await tx.insertInto('device_identities')
      .values({ device_id: request.deviceId, public_key: request.publicKey, auth_state: state, last_auth_at: request.timestamp, created_at: now, updated_at: now })
      .onConflict((oc) => oc.column('device_id').doNothing()).returning('device_id').executeTakeFirst();
    if (!row || state !== 'pending') return row;
    // Counted again with the new row, under the lock of pending enrollments (write-lock.ts):
    // the requests that all counted below the cap above, on every replica (or, on SQLite,
    // interleaved on the one connection), take their turn here, and those past it are undone.
    if ((await pendingCount(tx, since)) > maxPending) throw new UpdaterError('DEVICE_PENDING_FULL');
    await onNewPending(tx, request);
    return row;
  };
  const inserted = state === 'pending' ? await writeLocked(db, 'pending_enrollments', insert) : await db.transaction().execute(insert);
  // Another request of the same id got in first (on this or another replica): decide against its row.
  if (!inserted) return authenticate(db, request, policy, now, onNewPending);
  return state;
}

/** Accept or reject; accept is false for an id with no identity. A reject revokes. */
export async function setState(db: Db, deviceId: string, action: 'accept' | 'reject', now: number): Promise<boolean> {
  const state = action === 'accept' ? 'accepted' : 'rejected';
  return db.transaction().execute(async (tx) => {
    const updated = await tx.updateTable('device_identities').set({ auth_state: state, updated_at: now }).where('device_id', '=', deviceId).executeTakeFirst();
    if (Number(updated.numUpdatedRows) === 0) {
      if (action === 'accept') return false;
      // Any id can be rejected ahead of its first request: one seen only while auth was off, a
      // certificate's CN that never heartbeat, an id an attacker is expected to try. The row
      // binds no key, so any key it comes with is refused, and its certificate is too.
      await tx.insertInto('device_identities').values({ device_id: deviceId, public_key: '', auth_state: 'rejected', last_auth_at: 0, created_at: now, updated_at: now })
        .onConflict((oc) => oc.column('device_id').doUpdateSet({ auth_state: 'rejected', updated_at: now })).execute();
    }
    if (action === 'reject') await revoke(tx, deviceId, now);
    return true;
  });
}

/**
 * Adds devices an operator vouches for, whether the id is known or not. A pending or rejected
 * id becomes preauthorized with the operator's key (its next request is accepted): a pending
 * claim with another key is nobody's word, perhaps a squatter's, and a rejection is the
 * operator's own to lift. An accepted id is left as it is: its binding goes only by a delete.
 */
export async function preauthorize(db: Db, devices: readonly PreauthorizedDevice[], now: number): Promise<string[]> {
  const taken = new Set<string>();
  // In id order: concurrent calls naming the same ids lock their rows in the same order, so
  // they wait for each other rather than deadlock.
  const sorted = [...devices].sort((a, b) => (a.device_id < b.device_id ? -1 : a.device_id > b.device_id ? 1 : 0));
  await db.transaction().execute(async (tx) => {
    for (let i = 0; i < sorted.length; i += PREAUTHORIZE_CHUNK) {
      const chunk = sorted.slice(i, i + PREAUTHORIZE_CHUNK);
      const ids = chunk.map((d) => d.device_id);
      const existing = new Map((await tx.selectFrom('device_identities').select(['device_id', 'public_key', 'auth_state']).where('device_id', 'in', ids).execute())
        .map((r) => [r.device_id, r]));
      const fresh = chunk.filter((d) => !existing.has(d.device_id));
      if (fresh.length > 0) {
        // An id whose first request, or another preauthorization, inserted it since the read
        // (on another replica, or another connection) is not inserted here: it is judged below
        // as an id that was there, by the state its row has then.
        const inserted = await tx.insertInto('device_identities')
          .values(fresh.map((d) => ({ device_id: d.device_id, public_key: d.public_key, auth_state: 'preauthorized' as const, last_auth_at: 0, created_at: now, updated_at: now })))
          .onConflict((oc) => oc.column('device_id').doNothing()).returning('device_id').execute();
        for (const row of inserted) taken.add(row.device_id);
      }
      const waiting = chunk.filter((d) => !taken.has(d.device_id) && (!existing.has(d.device_id) || OVERRIDDEN.includes(existing.get(d.device_id)!.auth_state)));
      for (const d of waiting) {
        // Counted only when it changed the row: one accepted, or preauthorized by another call, since is left as it is.
        const updated = await tx.updateTable('device_identities').set({ auth_state: 'preauthorized', public_key: d.public_key, last_auth_at: 0, updated_at: now })
          .where('device_id', '=', d.device_id).where('auth_state', 'in', OVERRIDDEN).executeTakeFirst();
        if (Number(updated.numUpdatedRows) > 0) taken.add(d.device_id);
      }
    }
  });
  return devices.map((d) => d.device_id).filter((id) => taken.has(id));
}

/**
 * Forgets the device and revokes its tokens; false when nothing was known of it. A rejection
 * is kept: it holds until an operator accepts the id, so a rejected certificate (whose CA
 * still vouches for it) or a rejected key does not come back once its tokens would have expired.
 */
export async function deleteDevice(db: Db, deviceId: string, now: number): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    // Deleted, not read and then deleted: of concurrent deletes only the one that removed the
    // row counts it off, and off the version the row had then (a flush may have moved it since).
    const device = await tx.deleteFrom('devices').where('device_id', '=', deviceId).returning(['artifact', 'version_hash']).executeTakeFirst();
    const rejected = await tx.selectFrom('device_identities').select('device_id').where('device_id', '=', deviceId).where('auth_state', '=', 'rejected').executeTakeFirst();
    const identity = await tx.deleteFrom('device_identities').where('device_id', '=', deviceId).where('auth_state', '!=', 'rejected').executeTakeFirst();
    if (!device && !rejected && Number(identity.numDeletedRows) === 0) return false;
    if (device) {
      await tx.updateTable('fleet_versions').set({ devices: sql`devices - 1` })
        .where('artifact', '=', device.artifact).where('version_hash', '=', device.version_hash).execute();
    }
    await tx.deleteFrom('reports').where('device_id', '=', deviceId).execute();
    await revoke(tx, deviceId, now);
    return true;
  });
}

/** auth_state and public_key of the given devices (for the admin views). */
export async function identitiesOf(db: Db, ids: readonly string[]): Promise<Map<string, IdentityRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('device_identities').selectAll().where('device_id', 'in', [...ids]).execute();
  return new Map(rows.map((r) => [r.device_id, r]));
}

export async function identity(db: Db, deviceId: string): Promise<IdentityRow | undefined> {
  return db.selectFrom('device_identities').selectAll().where('device_id', '=', deviceId).executeTakeFirst();
}

/** The view of a device known only by its identity (it authenticated but never sent a heartbeat). */
export function identityOnlyView(row: IdentityRow): DeviceView {
  return {
    device_id: row.device_id, artifact: '', version_hash: '', version: '',
    hw_info: { arch: '', os: '', free_ram: 0, free_disk: 0 }, transport: '',
    first_seen: Number(row.created_at), last_seen: Number(row.last_auth_at), last_report: null,
    auth_state: row.auth_state, public_key: row.public_key || null,
  };
}

/** Adds auth_state and public_key to views read from the inventory. */
export async function withIdentities<V extends DeviceView>(db: Db, views: V[]): Promise<V[]> {
  const rows = await identitiesOf(db, views.map((v) => v.device_id));
  for (const view of views) {
    const row = rows.get(view.device_id);
    view.auth_state = row?.auth_state ?? null;
    view.public_key = row?.public_key || null;
  }
  return views;
}

/**
 * `GET /admin/devices?auth_state=…`: driven by the identities (a pending device has no inventory
 * record yet), each with its inventory record when it has one; the other filters apply to that.
 */
export async function listByAuthState(
  db: Db, q: DeviceQuery & { authState: DeviceAuthState }, inventoryView: (ids: string[]) => Promise<Map<string, DeviceView>>, livePendingSince: number,
): Promise<DevicePage> {
  let query = db.selectFrom('device_identities').selectAll().where('auth_state', '=', q.authState).orderBy('device_id').limit(q.limit + 1);
  if (q.authState === 'pending') query = query.where('created_at', '>=', livePendingSince);
  if (q.after !== undefined) query = query.where('device_id', '>', q.after);
  const inventoryFilters = q.artifact !== undefined || q.versionHash !== undefined || q.seenSince !== undefined || q.seenBefore !== undefined;
  if (inventoryFilters) {
    query = query.where((eb) => {
      let sub = eb.selectFrom('devices').select('devices.device_id').whereRef('devices.device_id', '=', 'device_identities.device_id');
      if (q.artifact !== undefined) sub = sub.where('devices.artifact', '=', q.artifact);
      if (q.versionHash !== undefined) sub = sub.where('devices.version_hash', '=', q.versionHash);
      if (q.seenSince !== undefined) sub = sub.where('devices.last_seen', '>=', q.seenSince);
      if (q.seenBefore !== undefined) sub = sub.where('devices.last_seen', '<', q.seenBefore);
      return eb.exists(sub);
    });
  }
  const rows = await query.execute();
  const more = rows.length > q.limit;
  const page = more ? rows.slice(0, q.limit) : rows;
  const inventory = await inventoryView(page.map((r) => r.device_id));
  const devices = page.map((r) => {
    const known = inventory.get(r.device_id);
    return known ? { ...known, auth_state: r.auth_state, public_key: r.public_key || null } : identityOnlyView(r);
  });
  return { devices, nextAfter: more ? page[page.length - 1]!.device_id : null };
}
