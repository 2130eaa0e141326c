import type { FleetApi, PendingFilter, PreauthorizedDevice } from '../../../messages/fleet.js';
import { parseDuration } from '../../../shared/duration.js';
import { invalidField, isRecord, refuseUnknownFields } from '../../../shared/input.js';
import type { Peer } from '../../../shared/rpc.js';
import { UpdaterError } from '../../../shared/errors.js';
import type { ActorContext } from '../../runtime.js';
import type { AdminRoute } from './route-types.js';
import { parseJson } from '../server/body.js';
import { parseDeviceId } from './fleet-query.js';
import { sendJson } from '../server/respond.js';
import { deviceIdField } from '../../../shared/wire/validate.js';

// The operator's side of device identity (docs/operations.md, enrollment): accept, reject,
// preauthorize in bulk, delete, and reject or delete pending enrollments in bulk by filter. The fleet actor decides and stores; a reject or a delete
// revokes the device's tokens on every front-end (and every replica) within seconds.

export const MAX_PREAUTHORIZE = 10_000;
/** A preauthorize body of 10,000 devices with 128-character ids fits with room to spare. */
const PREAUTHORIZE_BODY_BYTES = 4 * 1024 * 1024;

export function registerDeviceAdminRoutes(route: AdminRoute, ctx: ActorContext): void {
  const fleet = <R>(fn: (f: Peer<FleetApi>) => Promise<R>) => {
    if (!ctx.config.fleet.enabled) throw new UpdaterError('FLEET_DISABLED');
    return ctx.call('fleet', fn);
  };

  for (const action of ['accept', 'reject'] as const) {
    route('post', `/admin/devices/:id/${action}`, `admin_device_${action}`, async (ex, body, query) => {
      await body; // no body is taken; it is read (and capped) like the others
      const id = parseDeviceId(query.param ?? '');
      const device = await fleet((f) => f.setDeviceState(id, action));
      ctx.log.info({ device_id: id, action }, `admin: device ${action}ed`);
      sendJson(ex, 200, device);
    });
  }

  route('post', '/admin/devices/preauthorize', 'admin_devices_preauthorize', async (ex, body) => {
    const devices = parsePreauthorizeBody(await body!);
    const outcome = await fleet((f) => f.preauthorize(devices));
    ctx.log.info({ asked: devices.length, added: outcome.added }, 'admin: devices preauthorized');
    sendJson(ex, 200, outcome);
  }, PREAUTHORIZE_BODY_BYTES);

  for (const action of ['reject', 'delete'] as const) {
    route('post', `/admin/devices/${action}`, `admin_devices_${action}`, async (ex, body, query) => {
      const filter = parsePendingFilter(await body!, Date.now());
      const settled = await fleet((f) => f.settlePending(action, filter));
      query.audit.detail = `${action === 'reject' ? 'rejected' : 'deleted'} ${settled.length} pending devices (filter ${JSON.stringify(filter)})`;
      ctx.log.info({ action, filter, count: settled.length }, `admin: pending devices ${action === 'reject' ? 'rejected' : 'deleted'} in bulk`);
      sendJson(ex, 200, { [action === 'reject' ? 'rejected' : 'deleted']: settled.length, device_ids: settled });
    });
  }

  route('del', '/admin/devices/:id', 'admin_device_delete', async (ex, _body, query) => {
    const id = parseDeviceId(query.param ?? '');
    if (!(await fleet((f) => f.deleteDevice(id)))) throw new UpdaterError('DEVICE_NOT_FOUND', `no device ${JSON.stringify(id)} is known`);
    ctx.log.info({ device_id: id }, 'admin: device deleted');
    sendJson(ex, 200, { deleted: id });
  });
}

/** `{"devices":[{"device_id","public_key"}…]}`: at most 10,000, each checked, no id twice. */
export function parsePreauthorizeBody(body: Buffer): PreauthorizedDevice[] {
  const doc = parseJson(body) as { devices?: unknown };
  if (typeof doc !== 'object' || doc === null || !Array.isArray(doc.devices)) {
    throw new UpdaterError('INVALID_FIELD', 'the body must be {"devices":[{"device_id","public_key"}…]}', { field: 'devices' });
  }
  if (doc.devices.length === 0 || doc.devices.length > MAX_PREAUTHORIZE) {
    throw new UpdaterError('INVALID_FIELD', `devices must hold 1 to ${MAX_PREAUTHORIZE} entries (got ${doc.devices.length})`, { field: 'devices' });
  }
  const seen = new Set<string>();
  return doc.devices.map((entry: unknown, i: number) => {
    const { device_id: rawId, public_key: key } = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    const id = deviceIdField(rawId, `devices[${i}].device_id`);
    if (typeof key !== 'string' || !/^[0-9a-f]{64}$/.test(key)) {
      throw new UpdaterError('INVALID_FIELD', `devices[${i}].public_key must be 64 lowercase hex characters`, { field: `devices[${i}].public_key` });
    }
    if (seen.has(id)) throw new UpdaterError('INVALID_FIELD', `devices[${i}].device_id ${JSON.stringify(id)} is listed twice`, { field: `devices[${i}].device_id` });
    seen.add(id);
    return { device_id: id, public_key: key };
  });
}

/**
 * `{"filter":{"auth_state":"pending","first_seen_within":"2h","id_prefix":"dev-"}}`: which pending
 * enrollments a bulk reject or delete takes. auth_state is required and only `pending` is taken,
 * so a mistyped filter can never sweep accepted devices.
 */
export function parsePendingFilter(body: Buffer, nowMs: number): PendingFilter {
  const doc = parseJson(body);
  if (!isRecord(doc) || !isRecord(doc.filter)) invalidField('filter', 'must be an object: {"filter":{"auth_state":"pending",…}}');
  refuseUnknownFields(doc, ['filter']);
  const filter = doc.filter;
  refuseUnknownFields(filter, ['auth_state', 'first_seen_within', 'id_prefix']);
  if (filter.auth_state !== 'pending') invalidField('filter.auth_state', 'must be "pending" (only pending enrollments are settled in bulk)');
  const out: { createdSince?: number; idPrefix?: string } = {};
  if (filter.first_seen_within !== undefined) {
    const ms = typeof filter.first_seen_within === 'string' ? parseDuration(filter.first_seen_within) : undefined;
    if (ms === undefined || ms <= 0) invalidField('filter.first_seen_within', 'must be a duration like 15m, 24h or 7d');
    out.createdSince = Math.floor((nowMs - ms) / 1000);
  }
  if (filter.id_prefix !== undefined) out.idPrefix = deviceIdField(filter.id_prefix, 'filter.id_prefix');
  return out;
}
