import type { FleetApi, PreauthorizedDevice } from '../../messages/fleet.js';
import type { Peer } from '../../shared/rpc.js';
import { UpdaterError } from '../../shared/errors.js';
import type { ActorContext } from '../runtime.js';
import type { AdminRoute } from './admin-route.js';
import { parseJson } from './body.js';
import { parseDeviceId } from './fleet-query.js';
import { sendJson } from './respond.js';

// The operator's side of device identity (docs/operations.md, enrollment): accept, reject,
// preauthorize in bulk, delete. The fleet actor decides and stores; a reject or a delete
// revokes the device's tokens on every front-end (and every replica) within seconds.

export const MAX_PREAUTHORIZE = 10_000;
/** A preauthorize body of 10,000 devices with 128-character ids fits with room to spare. */
const PREAUTHORIZE_BODY_BYTES = 4 * 1024 * 1024;
const MAX_DEVICE_ID = 128;

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
    const { device_id: id, public_key: key } = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    if (typeof id !== 'string' || id.length === 0 || id.length > MAX_DEVICE_ID) {
      throw new UpdaterError('INVALID_FIELD', `devices[${i}].device_id must be a string of 1 to ${MAX_DEVICE_ID} characters`, { field: `devices[${i}].device_id` });
    }
    if (typeof key !== 'string' || !/^[0-9a-f]{64}$/.test(key)) {
      throw new UpdaterError('INVALID_FIELD', `devices[${i}].public_key must be 64 lowercase hex characters`, { field: `devices[${i}].public_key` });
    }
    if (seen.has(id)) throw new UpdaterError('INVALID_FIELD', `devices[${i}].device_id ${JSON.stringify(id)} is listed twice`, { field: `devices[${i}].device_id` });
    seen.add(id);
    return { device_id: id, public_key: key };
  });
}
