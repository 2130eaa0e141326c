import { readdir } from 'node:fs/promises';
import t from 'tap';
import { expectExit, makeDevice, startUpdateWorld, type AgentRun } from '../helpers/agent.js';
import { startProxy } from '../helpers/proxy.js';

// A transfer longer than announced, or one that stalls, is aborted; the device keeps running
// its current slot.

const world = await startUpdateWorld(t, 600_000);
const failedWith = (run: AgentRun, code: string) => run.lines.some((l) => l.msg === 'update cycle failed' && l.code === code);

t.test('a transfer that grows past delta_size is aborted and discarded', async (t) => {
  const proxy = await startProxy(world.server.url);
  t.teardown(() => proxy.close());
  // delta_size is not covered by the signature: a server (or a man in the middle) can lie about it.
  proxy.rewriteManifest = (m) => (m.signature ? { ...m, delta_size: m.delta_size - 1000 } : m);
  const device = await makeDevice(world.fixture, proxy.url, world.strangerBytes);
  const run = await device.runOnce();
  expectExit(t, run, 1, 'the cycle ends in error');
  t.ok(failedWith(run, 'AGENT_TRANSFER_TOO_LARGE'));
  const names = await readdir(device.slotDir);
  t.notOk(names.includes('.download.part'), 'the oversize transfer is discarded');
  t.notOk(names.includes('slot-b'));
  t.equal((await device.current()).slot, 'slot-a');
});

t.test('a transfer that stalls below the throughput floor is aborted', async (t) => {
  const proxy = await startProxy(world.server.url);
  t.teardown(() => proxy.close());
  proxy.stallNextDownloadAfter = 100_000;
  const device = await makeDevice(world.fixture, proxy.url, world.strangerBytes, {
    min_throughput_bps: 10_000, throughput_window: '300ms', download_attempts: 1,
  });
  const run = await device.runOnce();
  expectExit(t, run, 1, 'the cycle ends in error');
  t.ok(failedWith(run, 'AGENT_TRANSFER_TOO_SLOW'));
  t.equal((await device.current()).slot, 'slot-a');
  // What did arrive is kept: the next cycle resumes after it.
  const resumed = await device.runOnce();
  expectExit(t, resumed);
  const last = proxy.downloads().at(-1);
  t.match(last?.range, /^bytes=[1-9]\d*-$/, 'the next cycle resumes from the durable offset');
  t.equal((await device.current()).slot, 'slot-b');
});
