import { Counter, Gauge } from 'prom-client';
import type { Kysely } from 'kysely';
import type { DevicePage, DeviceQuery, DeviceView, FleetApi, ReportView } from '../../../messages/fleet.js';
import type { Database } from '../../../shared/database/schema.js';
import { deviceIdHash, mintDeviceToken } from '../../../shared/device-identity/token.js';
import { UpdaterError } from '../../../shared/errors.js';
import type { WebhookEvent } from '../../../shared/webhooks/events.js';
import type { ActorContext } from '../../runtime.js';
import type { Every } from '../schedule.js';
import { deviceView } from '../inventory/queries.js';
import { deletePending, rejectPending } from './bulk.js';
import * as ids from './identities.js';
import { TrustState } from './trust.js';
import { devicePendingEvent } from '../webhooks/device-events.js';

// The fleet actor's half of device identity: enrollment decisions and token issuing for POST
// /auth (pending entries expire after devices.pending_ttl), the operator's accept / reject /
// preauthorize / delete and bulk settling of pending devices, and the trust (token key and
// revocations) every front-end checks tokens with.
//
//   front-end ─authenticate─▶ identities (replay, binding, state) ─▶ token (MAC key)
//   front-end ─deviceTrust(version)─▶ waits for a change ◀─ reject / delete here
//                                                       ◀─ revocations polled from the database
//                                                          (other replicas' rejects), every 2 s

/** How often the revocations are read again: a reject on another replica is refused here within this plus a front-end's hop. */
const REVOCATION_POLL_MS = 2_000;
/** How often the pending gauge is counted afresh (besides after each change made here). */
const PENDING_GAUGE_MS = 30_000;
/** What a pending device is told to wait before it asks again, seconds. */
export const PENDING_RETRY_AFTER_S = 60;

/** Webhooks.record: events into the outbox, within the given transaction. */
type RecordEvents = (events: readonly WebhookEvent[], into: Kysely<Database>) => Promise<void>;
type IdentityApi = Pick<FleetApi, 'authenticate' | 'deviceTrust' | 'setDeviceState' | 'preauthorize' | 'deleteDevice' | 'settlePending'>;
type DeviceWithReports = DeviceView & { reports: ReportView[] };

export interface DeviceIdentity {
  api: IdentityApi;
  listDevices(query: DeviceQuery, inventory: () => Promise<DevicePage>): Promise<DevicePage>;
  device(id: string, inventory: () => Promise<DeviceWithReports | null>): Promise<DeviceWithReports | null>;
  /**
   * Whether a record the front-end received at `receivedAtMs` may enter the inventory: not when
   * the device was rejected or deleted in that second or after. A heartbeat answered just before
   * a delete (or before the front-ends learned of it) reaches the fleet after the delete and
   * would otherwise bring the device back. Tokens issued after a revocation count from the
   * second after it (TrustState.issuedAt), so no legitimate record falls in that second.
   */
  recordable(deviceId: string, receivedAtMs: number): boolean;
  stop(): void;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

export async function startDeviceIdentity(
  ctx: ActorContext, db: () => Kysely<Database>, every: Every, inventoryDevice: (id: string) => Promise<DeviceWithReports | null>,
  recordEvents: RecordEvents,
): Promise<DeviceIdentity> {
  const { auth, enrollment, tokenTtlMs, maxPending, pendingTtlMs } = ctx.config.devices;
  const ttl = Math.ceil(tokenTtlMs / 1000);
  const policy: ids.EnrollmentPolicy = { enrollment, maxPending, pendingTtl: Math.ceil(pendingTtlMs / 1000) };
  const livePendingSince = () => ids.pendingSince(policy, nowSeconds());
  const on = auth === 'on';
  const pending = new Gauge({ name: 'updater_devices_pending', help: 'Devices waiting for an operator to accept their key (devices.enrollment: manual)', registers: [ctx.registry] });
  const issued = new Counter({ name: 'updater_device_tokens_issued_total', help: 'Device tokens issued by POST /auth', registers: [ctx.registry] });
  const countPending = async () => pending.set(await ids.pendingCount(db(), livePendingSince()));
  // Identities are read and written with auth off too (an operator may preauthorize before
  // turning it on); the token key and the revocations only matter to checks, which need it on.
  const trust = on ? new TrustState(await ids.tokenKey(db())) : undefined;
  const reload = async () => {
    if (!trust) return;
    const since = nowSeconds() - ttl;
    await trust.refresh(async () => [await ids.revocations(db(), since), await ids.certificateRefusals(db(), since)]);
  };
  await reload().catch(() => undefined);
  await countPending().catch(() => undefined);
  if (trust) every(REVOCATION_POLL_MS, 'device revocations', reload);
  every(PENDING_GAUGE_MS, 'pending devices gauge', async () => {
    await ids.prunePending(db(), livePendingSince());
    await countPending();
    await ids.pruneRevocations(db(), nowSeconds() - ttl);
  });
  const revokeHere = (deviceId: string, at: number) => trust?.revoke(deviceIdHash(deviceId), at);

  const viewOf = async (id: string, inventory: () => Promise<DeviceWithReports | null>): Promise<DeviceWithReports | null> => {
    const known = await inventory();
    if (known) return (await ids.withIdentities(db(), [known]))[0]!;
    const row = await ids.identity(db(), id);
    return row ? { ...ids.identityOnlyView(row), reports: [] } : null;
  };

  const api: IdentityApi = {
    async authenticate(request) {
      if (!trust) throw new UpdaterError('NOT_FOUND', 'device authentication is off (devices.auth)');
      const now = nowSeconds();
      const decision = await ids.authenticate(db(), request, policy, now,
        (tx, first) => recordEvents([devicePendingEvent(first.deviceId, first.publicKey)], tx));
      if (decision === 'pending') {
        await countPending();
        return { state: 'pending', retryAfter: PENDING_RETRY_AFTER_S };
      }
      issued.inc();
      const token = mintDeviceToken(trust.snapshot().key, request.deviceId, trust.issuedAt(deviceIdHash(request.deviceId), now), ttl);
      return { state: 'accepted', token, expiresIn: ttl };
    },
    deviceTrust: async (known) => {
      if (!trust) throw new UpdaterError('NOT_FOUND', 'device authentication is off (devices.auth)');
      return trust.next(known);
    },
    async setDeviceState(deviceId, action) {
      const now = nowSeconds();
      if (!(await ids.setState(db(), deviceId, action, now))) throw new UpdaterError('DEVICE_NOT_FOUND', `no device ${JSON.stringify(deviceId)} is known`);
      if (action === 'reject') revokeHere(deviceId, now);
      else trust?.admit(deviceIdHash(deviceId));
      await countPending();
      const { reports: _reports, ...view } = (await viewOf(deviceId, () => inventoryDevice(deviceId)))!;
      return view;
    },
    async preauthorize(devices) {
      const added = await ids.preauthorize(db(), devices, nowSeconds());
      // A rejected id preauthorized anew: its certificate is let in here at once, elsewhere at the next poll.
      if (added.length > 0) await reload();
      await countPending();
      return { added: added.length, device_ids: added };
    },
    async deleteDevice(deviceId) {
      const now = nowSeconds();
      if (!(await ids.deleteDevice(db(), deviceId, now))) return false;
      revokeHere(deviceId, now);
      await countPending();
      return true;
    },
    async settlePending(action, filter) {
      const now = nowSeconds();
      const settled = action === 'reject'
        ? await rejectPending(db(), filter, ids.pendingSince(policy, now), now)
        : await deletePending(db(), filter, ids.pendingSince(policy, now));
      // Rejected ids' certificates are refused from now on, here at once (other replicas at their next poll).
      if (action === 'reject' && settled.length > 0) await reload();
      await countPending();
      return settled;
    },
  };

  return {
    api,
    async listDevices(query, inventory) {
      if (query.authState === undefined) {
        const page = await inventory();
        return { ...page, devices: await ids.withIdentities(db(), page.devices) };
      }
      return ids.listByAuthState(db(), { ...query, authState: query.authState }, async (list) => {
        const rows = list.length === 0 ? [] : await db().selectFrom('devices').selectAll().where('device_id', 'in', list).execute();
        return new Map(rows.map((r) => [r.device_id, deviceView(r)]));
      }, livePendingSince());
    },
    device: viewOf,
    recordable(deviceId, receivedAtMs) {
      if (!trust?.anyRevoked) return true;
      const revokedAt = trust.revokedAt(deviceIdHash(deviceId));
      return revokedAt === undefined || Math.floor(receivedAtMs / 1000) > revokedAt;
    },
    stop: () => trust?.release(),
  };
}
