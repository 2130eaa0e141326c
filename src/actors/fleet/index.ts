import type { FleetApi } from '../../messages/fleet.js';
import { runActor, type OwnApi } from '../runtime.js';
import { FleetDatabase } from './database.js';
import { startDeviceIdentity } from './identity/enrollment.js';
import * as groups from './inventory/groups.js';
import { createInventory } from './inventory/inventory.js';
import * as targeting from './inventory/targeting.js';
import { startOperators } from './operators/operators.js';
import { createSchedule } from './schedule.js';
import { registerIndexMetrics, TargetingIndexFeed } from './inventory/targeting-index.js';
import { Webhooks } from './webhooks/webhooks.js';

// The fleet actor: the only holder of the database connection (database.ts). Its API is four
// concerns, each in its folder, with the timers they share in schedule.ts:
//
//   http, coap ──record(batch)──▶ inventory/ (buffered writes, queries, retention; docs/fleet.md)
//   http, coap ──auth, trust──▶ identity/ (enrollment, device tokens, revocations)
//   http admin ──tokens, audit──▶ operators/ (docs/operations.md, "Authentication")
//   manifester, fleet ──events──▶ webhooks/ (the outbox and its sender)

/** How often an embedded database that could not be opened (store full or read-only) is tried again. */
const REOPEN_MS = 5_000;
/** How often the targeting index is read again: a cluster replica must see another's tag within 2 s (docs/scaling.md). */
const CLUSTER_INDEX_RELOAD_MS = 1_000;
const INDEX_RELOAD_MS = 30_000;

await runActor(async (ctx) => {
  const database = new FleetDatabase(ctx.config.database, ctx.log);
  const schedule = createSchedule(ctx.log);
  const webhooks = new Webhooks(ctx.config, () => database.current(), ctx.registry, ctx.log);
  // `identity` is started below, before the API is returned, so before any record can arrive.
  const inventory = createInventory(ctx, database, schedule, webhooks, (id, at) => identity.recordable(id, at));

  // A PostgreSQL URL that cannot be reached stops the start (exit 2, naming the key). The
  // embedded file lives in the store: when the store is full or read-only the server must still
  // start and serve devices (they never wait for the inventory), so the fleet actor starts
  // without it, keeps buffering within its budget, and opens it once the store recovers.
  try {
    await database.open();
  } catch (err) {
    // A cluster cannot serve without its database; with devices.auth on, the token key lives
    // there too: no device could be let in without it.
    if (ctx.config.cluster || ctx.config.devices.auth === 'on') throw err;
    ctx.log.error({ err }, 'fleet database cannot be opened: serving devices without the inventory, retrying every 5 s');
    const retry = () => {
      if (schedule.stopped || database.isOpen) return;
      database.reopen().then(() => inventory.refreshVersions(), () => schedule.later(REOPEN_MS, retry));
    };
    schedule.later(REOPEN_MS, retry);
  }
  await inventory.start();
  webhooks.start();
  const identity = await startDeviceIdentity(ctx, () => database.db(), schedule.every, inventory.deviceWithReports, (events, tx) => webhooks.record(events, tx));
  const operators = await startOperators(ctx, database, schedule);
  // Group steps are judged at the heartbeat from this index; a cluster replica reads it again
  // every 2 s, since another replica may have changed a tag or a group (docs/scaling.md).
  const index = new TargetingIndexFeed(() => database.db(), ctx.config.fleet.targetingIndexBytes, ctx.log);
  const reloadIndex = async () => {
    if (database.isOpen) await index.reload();
  };
  await reloadIndex().catch((err) => ctx.log.warn({ err }, 'could not read the targeting index; reading it again later'));
  schedule.every(ctx.config.cluster ? CLUSTER_INDEX_RELOAD_MS : INDEX_RELOAD_MS, 'targeting index', reloadIndex);
  registerIndexMetrics(ctx.registry, index);
  /** A change of tags or groups returns once every front-end judges by it. */
  const indexed = async <T>(change: Promise<T>): Promise<T> => {
    const outcome = await change;
    await index.changedHere();
    return outcome;
  };

  const viewDevice = async (id: string) => {
    const found = await identity.device(id, () => inventory.deviceWithReports(id));
    return found && (await targeting.withTargeting(database.db(), [found]))[0]!;
  };

  return {
    ...inventory.api,
    async listDevices(query) {
      const filter = query.group === undefined ? undefined : await groups.groupFilter(database.db(), query.group);
      const page = await identity.listDevices(query, () => inventory.listDevices(query, filter));
      return { ...page, devices: await targeting.withTargeting(database.db(), page.devices) };
    },
    device: viewDevice,
    ...identity.api,
    async deleteDevice(deviceId) {
      // What is buffered for the device is written first, so that the delete removes it too.
      await inventory.api.flush();
      const deleted = await identity.api.deleteDevice(deviceId);
      await indexed(targeting.forgetTargeting(database.db(), [deviceId]));
      return deleted;
    },
    async setTags(deviceId, tags) {
      // Buffered heartbeats first: a device seen a moment ago is in the inventory.
      await inventory.api.flush();
      if (!(await indexed(targeting.setTags(database.db(), deviceId, tags)))) return null;
      return viewDevice(deviceId);
    },
    async changeTags(change) {
      await inventory.api.flush();
      return indexed(targeting.changeTags(database.db(), change, Date.now()));
    },
    putGroup: (name, filter) => indexed(groups.putGroup(database.db(), name, filter, Date.now())),
    group: (name) => groups.group(database.db(), name, Date.now()),
    groups: () => groups.groups(database.db(), Date.now()),
    groupNames: () => groups.groupNames(database.db()),
    deleteGroup: (name) => indexed(groups.deleteGroup(database.db(), name, Date.now())),
    targetingIndex: (poller, known) => index.publisher.poll(poller, known, 'index'),
    ...operators.api,
    recordEvents: (events) => webhooks.record(events),
    webhookState: () => webhooks.state(),
    async drain() {
      schedule.stop();
      index.publisher.stop();
      identity.stop();
      await webhooks.stop();
      await inventory.api.flush();
      await operators.close();
      await database.close();
    },
  } satisfies OwnApi<FleetApi>;
});
