import type { FleetApi, TagChange } from '../../../messages/fleet.js';
import { UpdaterError } from '../../../shared/errors.js';
import { isRecord, refuseUnknownFields } from '../../../shared/input.js';
import type { Peer } from '../../../shared/rpc.js';
import { parseFilter } from '../../../shared/targeting/filter.js';
import { parseTagList, parseTargetName, refuse } from '../../../shared/targeting/names.js';
import type { ActorContext } from '../../runtime.js';
import { objectBody } from './body.js';
import { parseDeviceId } from './fleet-query.js';
import type { AdminRoute } from './route-types.js';
import { sendJson } from '../server/respond.js';

// Tags and groups (docs/rollouts.md, "Targeting"): bodies checked here, the fleet actor stores
// them. A group a live rollout names cannot be deleted: the rollouts are the manifester's, so
// the manifester deletes it.

/** A group name from the path, percent-decoded. */
function groupName(segment: string | undefined): string {
  let name: string;
  try {
    name = decodeURIComponent(segment ?? '');
  } catch {
    refuse('name', 'is not valid percent-encoding');
  }
  return parseTargetName(name, 'name');
}

export function parseTagChange(body: Buffer): TagChange {
  const fields = objectBody(body, false);
  refuseUnknownFields(fields, ['filter', 'add', 'remove']);
  if (fields.filter === undefined) refuse('filter', 'is required ({} matches every device)');
  const filter = parseFilter(fields.filter);
  const add = fields.add === undefined ? [] : parseTagList(fields.add, 'add');
  const remove = fields.remove === undefined ? [] : parseTagList(fields.remove, 'remove');
  if (add.length === 0 && remove.length === 0) refuse('add', 'or remove must name at least one tag');
  const both = add.find((tag) => remove.includes(tag));
  if (both !== undefined) refuse('remove', `names ${JSON.stringify(both)}, which add names too`);
  return { filter, add, remove };
}

export function registerTargetingRoutes(route: AdminRoute, ctx: ActorContext): void {
  const fleet = <R>(fn: (f: Peer<FleetApi>) => Promise<R>) => {
    if (!ctx.config.fleet.enabled) throw new UpdaterError('FLEET_DISABLED');
    return ctx.call('fleet', fn);
  };

  route('put', '/admin/devices/:id/tags', 'admin_device_tags', async (ex, body, query) => {
    const id = parseDeviceId(query.param ?? '');
    const fields = objectBody(await body!, false);
    refuseUnknownFields(fields, ['tags']);
    const tags = parseTagList(fields.tags, 'tags');
    const device = await fleet((f) => f.setTags(id, tags));
    if (!device) throw new UpdaterError('DEVICE_NOT_FOUND', `no device ${JSON.stringify(id)} is in the inventory`);
    query.audit.detail = `tags of ${id}: ${tags.join(', ') || '(none)'}`;
    sendJson(ex, 200, device);
  });

  route('post', '/admin/tags', 'admin_tags', async (ex, body, query) => {
    const change = parseTagChange(await body!);
    const outcome = await fleet((f) => f.changeTags(change));
    query.audit.detail = `tags +[${change.add.join(', ')}] -[${change.remove.join(', ')}] on ${outcome.devices} devices`;
    ctx.log.info({ add: change.add, remove: change.remove, devices: outcome.devices }, 'admin: tags changed in bulk');
    sendJson(ex, 200, outcome);
  });

  route('get', '/admin/groups', 'admin_groups', async (ex) => {
    sendJson(ex, 200, { groups: await fleet((f) => f.groups()) });
  });

  route('get', '/admin/groups/:name', 'admin_group', async (ex, _body, query) => {
    const name = groupName(query.param);
    const group = await fleet((f) => f.group(name));
    if (!group) throw new UpdaterError('GROUP_NOT_FOUND', `no group ${JSON.stringify(name)}`);
    sendJson(ex, 200, group);
  });

  route('put', '/admin/groups/:name', 'admin_group_put', async (ex, body, query) => {
    const name = groupName(query.param);
    const fields = objectBody(await body!, false);
    refuseUnknownFields(fields, ['filter']);
    if (!isRecord(fields.filter)) refuse('filter', 'is required: an object ({} matches every device)');
    const filter = parseFilter(fields.filter);
    const group = await fleet((f) => f.putGroup(name, filter));
    query.audit.detail = `group ${name}: ${JSON.stringify(group.filter)}`;
    sendJson(ex, 200, group);
  });

  route('del', '/admin/groups/:name', 'admin_group_delete', async (ex, _body, query) => {
    const name = groupName(query.param);
    if (!ctx.config.fleet.enabled) throw new UpdaterError('FLEET_DISABLED');
    // The manifester owns the rollouts: it deletes a group no rollout names (GROUP_IN_USE
    // otherwise), as one step with the publishes that name groups (rollout/rollout-groups.ts).
    const deleted = await ctx.call('manifester', (m) => m.deleteGroup(name));
    if (!deleted) throw new UpdaterError('GROUP_NOT_FOUND', `no group ${JSON.stringify(name)}`);
    query.audit.detail = `group ${name} deleted`;
    sendJson(ex, 200, deleted);
  });
}
