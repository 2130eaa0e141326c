import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { expectExit, makeDevice, startUpdateWorld, type Device, type UpdateWorld } from '../helpers/agent.js';
import { sha256Hex } from '../helpers/fixture.js';
import { startProxy, type Proxy } from '../helpers/proxy.js';

// The agent is killed with SIGKILL at each step of the update cycle (the test-only fault
// hook of agent/fault.ts) and started again. Whatever the step, `current` names a slot
// holding the old or the new target, and a later cycle finishes the update. Each device has an
// identity (devices.auth on): a kill also lands between an auth request and keeping its token.

const world: UpdateWorld = await startUpdateWorld(t, undefined, { devices: { auth: 'on', enrollment: 'open' } });
let devices = 0;
/** A device with its own identity key, made at its first start. */
const identity = () => ({ identity_key_file: join(world.fixture.dir, `crash-identity-${++devices}.key`) });

/** Runs clean cycles until the device runs v2 with no pending marker; checks the invariant after each. */
async function finishes(t: Test, device: Device, oldHash: string): Promise<void> {
  for (let cycle = 1; cycle <= 4; cycle++) {
    const run = await device.runOnce();
    expectExit(t, run, 0, `clean cycle ${cycle} exits 0`);
    const { hash } = await device.current();
    t.ok(hash === oldHash || hash === world.v2Hash, `after clean cycle ${cycle}, current holds the old or the new target`);
    const pending = (await readdir(device.slotDir)).includes('.pending_update');
    if (hash === world.v2Hash && !pending) {
      t.ok((await device.readState()).releaseSequence > 0, 'the release sequence was recorded with the swap');
      return;
    }
  }
  t.fail('the update did not finish within 4 cycles');
}

async function killedAt(t: Test, device: Device, step: string, oldHash: string): Promise<void> {
  const run = await device.runOnce(step);
  if (!t.equal(run.signal, 'SIGKILL', `the agent is killed at ${step}`)) t.comment(run.output);
  const { hash } = await device.current();
  t.ok(hash === oldHash || hash === world.v2Hash, 'after the kill, current holds the old or the new target');
}

/**
 * A kill during the rebuild leaves the decompressed patch; the next start removes it before it
 * does anything else (here it is killed again right after its heartbeat, before any rebuild
 * could write and remove the file itself).
 */
async function patchIsCleared(t: Test, device: Device): Promise<void> {
  t.ok((await readdir(device.slotDir)).includes('.patch'), 'the kill left the decompressed patch');
  const run = await device.runOnce('after-heartbeat');
  if (!t.equal(run.signal, 'SIGKILL', 'the restarted agent is killed after its heartbeat')) t.comment(run.output);
  t.notOk((await readdir(device.slotDir)).includes('.patch'), 'the restarted agent removed it at start');
}

const DELTA_STEPS = ['after-heartbeat', 'after-signature-check', 'mid-download', 'after-download', 'after-transfer-check', 'mid-patch',
  'after-patch', 'after-reconstruction-check', 'after-marker', 'after-swap', 'after-restart'];

for (const step of DELTA_STEPS) {
  t.test(`delta mode, killed ${step}: current stays valid and a later cycle finishes the update`, async (t) => {
    const device = await makeDevice(world.fixture, world.server.url, world.v1Bytes, identity());
    await killedAt(t, device, step, world.v1Hash);
    await finishes(t, device, world.v1Hash);
  });
}

// Only a BSDIFF40 delta is decompressed into a patch file before it is applied (bsdiff-lzma, the
// agent's first choice, is applied from the transfer as it is).
t.test('BSDIFF40 delta, killed mid-patch: the next start removes the decompressed patch', async (t) => {
  const device = await makeDevice(world.fixture, world.server.url, world.v1Bytes, { ...identity(), delta_formats: ['bsdiff40'] });
  await killedAt(t, device, 'mid-patch', world.v1Hash);
  await patchIsCleared(t, device);
  await finishes(t, device, world.v1Hash);
});

for (const step of ['mid-download', 'mid-patch']) {
  t.test(`full mode, killed ${step}: current stays valid and a later cycle finishes the update`, async (t) => {
    let proxy: Proxy | undefined;
    if (step === 'mid-download') {
      proxy = await startProxy(world.server.url);
      t.teardown(() => proxy!.close());
    }
    const device = await makeDevice(world.fixture, proxy?.url ?? world.server.url, world.strangerBytes, identity());
    const strangerHash = sha256Hex(world.strangerBytes);
    await killedAt(t, device, step, strangerHash);
    await finishes(t, device, strangerHash);
    if (proxy) {
      const downloads = proxy.downloads();
      const resumedFrom = Number(/^bytes=(\d+)-$/.exec(downloads.at(-1)?.range ?? '')?.[1]);
      t.ok(resumedFrom > 0, `the restarted agent resumed the download from its durable offset (${resumedFrom})`);
    }
  });
}
