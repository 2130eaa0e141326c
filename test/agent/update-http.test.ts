import { spawn } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { expectExit, logged, makeDevice } from '../helpers/agent.js';
import { firmware, makeFixture, nextVersion, sha256Hex } from '../helpers/fixture.js';
import { heartbeatUntilSigned } from '../helpers/http.js';
import { UPDATER_BIN, startTestServer } from '../helpers/server.js';
import { nodeChild } from '../helpers/node-options.js';

t.test('a device on v1 updates to v2 by delta over HTTP and confirms it in the boot phase', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(1_500_000, 'u1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'u2'));
  const server = await startTestServer(fixture, [
    { name: 'app', version: '2.0.0', binary: v2.path },
    { name: 'legacy', version: '1.0.0', binary: v1.path },
  ], { default_artifact: 'app' });
  t.teardown(() => server.stop());
  const device = await makeDevice(fixture, server.url, await readFile(v1.path));

  // The first heartbeat may find the delta still being generated: the agent then downloads nothing.
  let run = await device.runOnce();
  expectExit(t, run);
  if (logged(run, 'update being prepared; heartbeat again later')) {
    t.notOk(logged(run, 'update available'), 'a pending manifest leads to no download');
    await heartbeatUntilSigned(server.url, v1.hash, 'app', 60_000, undefined, ['bsdiff-lzma', 'bsdiff40']);
    run = await device.runOnce();
    expectExit(t, run);
  }
  t.ok(logged(run, 'new slot activated; restarting'), 'the update was installed');
  t.same(await device.current(), { slot: 'slot-b', hash: v2.hash }, 'current names slot-b, which holds v2');
  t.ok((await readdir(device.slotDir)).includes('.pending_update'), 'the marker waits for the boot phase');

  run = await device.runOnce();
  expectExit(t, run);
  t.ok(logged(run, 'update confirmed'));
  t.ok(logged(run, 'update report delivered'));
  t.ok(logged(run, 'up to date'), 'the heartbeat after the boot phase finds nothing new');
  const names = await readdir(device.slotDir);
  t.notOk(names.includes('.pending_update'), 'the marker is cleared');
  t.notOk(names.includes('.download.part'), 'the transfer is cleaned up');
  t.equal(sha256Hex(await readFile(join(device.slotDir, 'slot-a'))), v1.hash, 'the previous slot is kept for a later rollback');
  const state = await device.readState();
  t.same(state.unsentReports, [], 'the success report was delivered');
  t.equal(state.runningVersion, '2.0.0');
});

t.test('without --once the agent keeps cycling: it installs, confirms, idles, and exits 0 on SIGTERM', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(300_000, 'l1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'l2'));
  const server = await startTestServer(fixture, [
    { name: 'app', version: '2.0.0', binary: v2.path },
    { name: 'legacy', version: '1.0.0', binary: v1.path },
  ], { default_artifact: 'app' });
  t.teardown(() => server.stop());
  const device = await makeDevice(fixture, server.url, await readFile(v1.path), { interval: '200ms' });
  const node = nodeChild([UPDATER_BIN, 'agent', '--config', device.configPath]);
  const child = spawn(node.command, node.args, { stdio: ['ignore', 'pipe', 'pipe'], env: node.env });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  t.teardown(() => child.kill('SIGKILL'));
  const deadline = Date.now() + 60_000;
  while (!/"update confirmed"[\s\S]*"up to date"/.test(output) && Date.now() < deadline && child.exitCode === null) {
    await new Promise((r) => setTimeout(r, 100));
  }
  t.match(output, /"update confirmed"[\s\S]*"up to date"/, 'the update was installed, confirmed, and the next cycle found nothing new');
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM ends the loop cleanly');
  t.same(await device.current(), { slot: 'slot-b', hash: v2.hash });
});
