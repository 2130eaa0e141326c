import { readdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { expectExit, makeDevice, startUpdateWorld } from '../helpers/agent.js';
import { sha256Hex } from '../helpers/fixture.js';
import { heartbeatUntilSigned } from '../helpers/http.js';
import { canMount, mountSmallDisk } from '../helpers/tmpfs.js';

// The disk fills while the new slot is being written (the transfer fitted, the rebuild does
// not). The cycle ends with AGENT_DISK_FULL and a backoff of at least 5 minutes, persisted. The
// slot written part-way must not stay behind: it holds the rest of the disk, so the device's own
// services would run on a full disk for the whole backoff (and every retry fills it again), and
// the agent could not even persist that backoff.

t.setTimeout(300_000);

t.test('a rebuild that fills the disk leaves no partial slot behind, and the backoff is persisted', { skip: canMount ? false : 'needs root to mount a tmpfs' }, async (t) => {
  const world = await startUpdateWorld(t, 1_500_000);
  const manifest = await heartbeatUntilSigned(world.server.url, sha256Hex(world.strangerBytes), 'app');
  t.ok(manifest.binary_endpoint, 'the device gets the whole target (full mode)');
  const disk = await mountSmallDisk(t, join(world.fixture.dir, 'small-disk'), 12);
  const slotDir = disk.dir;
  await writeFile(join(slotDir, 'slot-a'), world.strangerBytes, { mode: 0o755 });
  await symlink('slot-a', join(slotDir, 'current'));
  const device = await makeDevice(world.fixture, world.server.url, world.strangerBytes, { slot_dir: slotDir });
  // Room for the transfer and about half the target: the rebuild runs out of space.
  await disk.fillLeaving(manifest.delta_size + Math.floor(manifest.target_size / 2));

  const started = Date.now();
  const run = await device.runOnce();
  expectExit(t, run, 1, 'the cycle ends in error');
  t.ok(run.lines.some((l) => l.msg === 'update cycle failed' && l.code === 'AGENT_DISK_FULL'), 'with AGENT_DISK_FULL');
  t.equal(await readlink(join(slotDir, 'current')), 'slot-a', 'the device still runs slot-a');
  const names = await readdir(slotDir);
  t.notOk(names.includes('slot-b'), `the partial slot-b is removed (${names.join(', ')})`);
  t.ok(disk.free() >= manifest.target_size / 4, `the space it took is free again (${disk.free()} bytes free)`);
  t.notOk(run.lines.some((l) => l.msg === 'could not save agent state'), 'the agent state could be saved');
  const state = JSON.parse(await readFile(join(slotDir, '.agent-state.json'), 'utf8'));
  t.ok(state.backoffUntil >= started + 5 * 60_000, 'the disk-full backoff of at least 5 minutes is persisted');
  t.ok(names.includes('.download.part'), 'the verified transfer is kept for the next try');
});
