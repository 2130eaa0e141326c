import type { DeviceDetail, DeviceListing, FleetView, ReportListing } from '../../../messages/admin-wire.js';
import type { DevicePage, FleetApi, FleetReportView, FleetSummary } from '../../../messages/fleet.js';
import type { Peer } from '../../../shared/rpc.js';
import { UpdaterError } from '../../../shared/errors.js';
import type { ActorContext } from '../../runtime.js';
import type { AdminRoute } from './route-types.js';
import { encodeCursor, parseDeviceId, parseDeviceQuery, parseReportQuery, parseSummaryQuery } from './fleet-query.js';
import { sendJson } from '../server/respond.js';

// The inventory's admin calls (docs/fleet.md, "Reading it"): the query is checked here, the
// fleet actor answers from the database.

export function registerFleetRoutes(route: AdminRoute, ctx: ActorContext): void {
  const fleet = <R>(fn: (f: Peer<FleetApi>) => Promise<R>) => {
    if (!ctx.config.fleet.enabled) throw new UpdaterError('FLEET_DISABLED');
    return ctx.call('fleet', fn);
  };

  route('get', '/admin/devices', 'admin_devices', async (ex, _body, query) => {
    const request = parseDeviceQuery(query.raw, Date.now());
    const page = await fleet<DevicePage>((f) => f.listDevices(request));
    sendJson(ex, 200, { devices: page.devices, next: page.nextAfter === null ? null : encodeCursor(page.nextAfter) } satisfies DeviceListing);
  });

  route('get', '/admin/devices/:id', 'admin_device', async (ex, _body, query) => {
    const id = parseDeviceId(query.param ?? '');
    const device = await fleet<DeviceDetail | null>((f) => f.device(id));
    if (!device) throw new UpdaterError('DEVICE_NOT_FOUND', `no device ${JSON.stringify(id)} is in the inventory`);
    sendJson(ex, 200, device);
  });

  route('get', '/admin/reports', 'admin_reports', async (ex, _body, query) => {
    const request = parseReportQuery(query.raw);
    sendJson(ex, 200, { reports: await fleet<FleetReportView[]>((f) => f.recentReports(request)) } satisfies ReportListing);
  });

  route('get', '/admin/fleet', 'admin_fleet', async (ex, _body, query) => {
    let artifact = parseSummaryQuery(query.raw);
    if (artifact === undefined) {
      const listing = await ctx.call('manifester', (m) => m.listTracks());
      if (!listing.default) throw new UpdaterError('INVALID_FIELD', 'artifact is required: there is no default track', { field: 'artifact' });
      artifact = listing.default;
    }
    const key = artifact;
    // The inventory comes from the fleet actor, the rollout from the manifester (it owns the tracks).
    const [summary, rollout] = await Promise.all([
      fleet<FleetSummary>((f) => f.summary(key)),
      ctx.call('manifester', (m) => m.rolloutOf(key)),
    ]);
    sendJson(ex, 200, { ...summary, rollout } satisfies FleetView);
  });
}
