import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import t, { type Test } from 'tap';
import { firmware, freePort, makeFixture, nextVersion, noise, sha256Hex } from '../helpers/fixture.js';
import { getBytes, heartbeat, heartbeatUntilSigned } from '../helpers/http.js';
import { configDocument, spawnServer, writeConfig, type ServerProcess } from '../helpers/server.js';
import { needs } from '../helpers/system-tools.js';
import { descendantsNamed, isRunning } from '../helpers/processes.js';

/**
 * The server the first test started again after its crash, with a hash it holds: the SIGTERM
 * test drains that one rather than start a process of its own (one spawned start, about 1.5 s
 * of CPU). Its store stays until the file ends.
 */
let restarted: { server: ServerProcess; hash: string } | undefined;
/** The file's own test: what the first test leaves to the SIGTERM test is torn down with it. */
const file = t;

t.test('kill -9 during a delta generation leaves no file that is ever served', needs('zstd', 'bspatch'), async (t) => {
  const fixture = await makeFixture();
  file.teardown(() => fixture.cleanup());
  // Large enough that bsdiff runs for a while on this machine. Only the size and that v2 is
  // the next version of v1 matter: noise(), where firmware() spent half a second on 12 MB.
  const v1 = await fixture.writeBinary('v1.bin', noise(12_000_000, 'k9-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'k9-v2'));
  const port = await freePort();
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [
    { name: 'app', version: '2', binary: v2.path },
    { name: 'legacy', version: '1', binary: v1.path },
  ], { default_artifact: 'app', log_level: 'info' }));
  const url = `http://127.0.0.1:${port}`;
  const deltas = join(fixture.dir, 'store', 'deltas');
  const deltaName = `${v1.hash}_${v2.hash}.delta.zst`;

  const first = await spawnServer(configPath, url);
  const pending = await heartbeat(url, v1.hash);
  t.ok(pending.json.retry_after > 0, 'generation started');
  // Wait until the diff pool is really at work (its engine has begun writing the patch into
  // the scratch space), then pull the plug. Waited for by what happens, not by a time: the
  // engine writes once its suffix sort of 12 MB is done, and beside busy processes that took
  // longer than the 20 s this wait once allowed (1 stress round in 3). It ends early if the
  // engine ended without writing or the server exited.
  const workDir = join(fixture.dir, 'store', 'work');
  let engineSeen = false;
  while ((await readdir(workDir)).length === 0 && first.child.exitCode === null) {
    const running = descendantsNamed(first.child.pid!, 'updater-delta').length > 0;
    if (engineSeen && !running) break;
    engineSeen ||= running;
    await new Promise((r) => setTimeout(r, 20));
  }
  t.ok((await readdir(workDir)).length > 0, 'the diff is under way');
  // The engine runs as a child process of the server. Stopped here, it cannot finish on its
  // own: only the kernel's parent-death signal can end it once the server is gone, and if it
  // lived on it would write its patch into the work directory the restarted server just tidied.
  const engines = descendantsNamed(first.child.pid!, 'updater-delta');
  t.equal(engines.length, 1, 'one delta engine process runs the generation');
  t.teardown(() => engines.filter(isRunning).forEach((pid) => process.kill(pid, 'SIGKILL')));
  for (const pid of engines) process.kill(pid, 'SIGSTOP');
  first.child.kill('SIGKILL');
  await first.exited;
  const killedAt = Date.now();
  while (engines.some(isRunning) && Date.now() - killedAt < 10_000) await new Promise((r) => setTimeout(r, 20));
  t.same(engines.filter(isRunning), [], 'the delta engine ends with the server that ran it');
  t.notOk((await readdir(deltas)).includes(deltaName), 'no delta exists under its final name after the crash');

  const second = await spawnServer(configPath, url);
  file.teardown(async () => {
    second.child.kill('SIGTERM');
    await second.exited;
  });
  t.notOk((await readdir(deltas)).some((n) => n.startsWith('.tmp-')), 'leftover temporaries are removed at start');
  t.same(await readdir(workDir), [], 'the diff scratch space is emptied at start');
  const gone = await getBytes(`${url}/delta/${v1.hash}/${v2.hash}`);
  t.equal(gone.status, 404, 'nothing half-written is served');

  const manifest = await heartbeatUntilSigned(url, v1.hash);
  const { body } = await getBytes(`${url}${manifest.delta_endpoint}`);
  t.equal(sha256Hex(body), manifest.delta_hash);
  await writeFile(join(fixture.dir, 'd.zst'), body);
  execFileSync('zstd', ['-d', '-q', '-f', join(fixture.dir, 'd.zst'), '-o', join(fixture.dir, 'd.patch')]);
  execFileSync('bspatch', [v1.path, join(fixture.dir, 'out.bin'), join(fixture.dir, 'd.patch')]);
  t.equal(sha256Hex(await readFile(join(fixture.dir, 'out.bin'))), v2.hash, 'the regenerated delta rebuilds the target');
  restarted = { server: second, hash: v2.hash };
});

/** A server of the SIGTERM test's own, when the first test did not get as far as its restart. */
async function ownServer(t: Test): Promise<{ server: ServerProcess; hash: string }> {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(10_000, 'term'));
  const port = await freePort();
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [{ name: 'app', version: '2', binary: v2.path }], { log_level: 'info' }));
  const server = await spawnServer(configPath, `http://127.0.0.1:${port}`);
  t.teardown(() => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  });
  return { server, hash: v2.hash };
}

t.test('SIGTERM drains the server and it exits 0', async (t) => {
  const { server, hash } = restarted ?? await ownServer(t);
  t.equal((await heartbeat(server.url, hash)).status, 200);
  server.child.kill('SIGTERM');
  t.equal(await server.exited, 0);
  t.match(server.output(), /"msg":"server stopped"/);
});
