import { readdir } from 'node:fs/promises';
import t, { type Test } from 'tap';
import { expectExit, logged, makeDevice, startUpdateWorld, type Device, type UpdateWorld } from '../helpers/agent.js';
import { startProxy } from '../helpers/proxy.js';

// Kills during the boot phase (step 9): the boot count is durable, so a device that keeps
// dying on its new slot rolls back instead of looping, and a rollback interrupted after its
// swap still ends on the old slot with the failure reported.

const world: UpdateWorld = await startUpdateWorld(t, 400_000);

async function installed(t: Test, device: Device): Promise<void> {
  expectExit(t, await device.runOnce(), 0, 'the update is installed');
  t.same(await device.current(), { slot: 'slot-b', hash: world.v2Hash });
}

const hasMarker = async (device: Device) => (await readdir(device.slotDir)).includes('.pending_update');

for (const step of ['boot-before-health-check', 'boot-after-health-check', 'boot-after-sequence-saved']) {
  t.test(`killed at ${step}: the next start confirms the update`, async (t) => {
    const device = await makeDevice(world.fixture, world.server.url, world.v1Bytes);
    await installed(t, device);
    const killed = await device.runOnce(step);
    t.equal(killed.signal, 'SIGKILL');
    t.same(await device.current(), { slot: 'slot-b', hash: world.v2Hash }, 'still on the new slot');
    t.ok(await hasMarker(device), 'the update is still unconfirmed');
    const next = await device.runOnce();
    expectExit(t, next);
    t.ok(next.lines.some((l) => l.msg === 'boot phase: confirming the new slot' && l.bootCount === 2), 'the boot count survived the kill');
    t.ok(logged(next, 'update confirmed'));
    t.notOk(await hasMarker(device));
    t.same(await device.current(), { slot: 'slot-b', hash: world.v2Hash });
    t.ok((await device.readState()).releaseSequence > 0, 'the release sequence of the new slot is recorded');
  });
}

t.test('a new slot that kills the agent on every start is rolled back once the boot count passes its limit', async (t) => {
  const device = await makeDevice(world.fixture, world.server.url, world.v1Bytes, { max_boot_attempts: 2 });
  await installed(t, device);
  for (let start = 1; start <= 2; start++) {
    t.equal((await device.runOnce('boot-before-health-check')).signal, 'SIGKILL', `start ${start} dies in the boot phase`);
    t.same(await device.current(), { slot: 'slot-b', hash: world.v2Hash });
  }
  const third = await device.runOnce('boot-before-health-check');
  t.equal(third.signal, 'SIGKILL', 'the third start dies too, after rolling back');
  // The fault fires right after the boot count is raised, before the limit is checked: the
  // next start sees 4 > 2 and rolls back.
  const next = await device.runOnce();
  expectExit(t, next);
  t.ok(next.lines.some((l) => l.msg === 'rolling back to the previous slot' && /did not confirm within 2 boots/.test(l.reason)));
  t.same(await device.current(), { slot: 'slot-a', hash: world.v1Hash }, 'back on the old slot');
  t.notOk(await hasMarker(device));
  const after = await device.runOnce();
  expectExit(t, after);
  t.same(await device.current(), { slot: 'slot-a', hash: world.v1Hash }, 'the rolled-back target is not installed again');
});

t.test('killed right after the rollback swap: the device stays on the old slot and the failure is reported', async (t) => {
  const proxy = await startProxy(world.server.url);
  t.teardown(() => proxy.close());
  const device = await makeDevice(world.fixture, proxy.url, world.v1Bytes);
  await installed(t, device);
  proxy.failHeartbeats = 3;
  const killed = await device.runOnce('boot-after-rollback-swap');
  t.equal(killed.signal, 'SIGKILL');
  t.same(await device.current(), { slot: 'slot-a', hash: world.v1Hash }, 'the swap back happened');
  const next = await device.runOnce();
  expectExit(t, next);
  t.notOk(await hasMarker(device), 'the stale marker is cleared');
  t.same(await device.current(), { slot: 'slot-a', hash: world.v1Hash });
  t.notOk(logged(next, 'new slot activated; restarting'), 'no second attempt at the rolled-back target');
  t.match(proxy.reports.at(-1), { success: false, new_hash: world.v2Hash, rollback_reason: /health check failed 3 times/ });
});
