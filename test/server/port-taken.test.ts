import t from 'tap';
import { firmware, freePort, makeFixture } from '../helpers/fixture.js';
import { configDocument, runUpdater, spawnServer, writeConfig } from '../helpers/server.js';

// uWS binds with SO_REUSEPORT unless told otherwise: a second server on the same port would
// "listen" and the kernel would split devices between two servers. It must refuse to start.
t.test('a second server on a taken HTTP port fails at start, loudly, with a non-zero exit', async (t) => {
  const first = await makeFixture();
  const second = await makeFixture();
  t.teardown(() => Promise.all([first.cleanup(), second.cleanup()]));
  const port = await freePort();
  const artifacts = async (f: typeof first) => [{ name: 'app', version: '1', binary: (await f.writeBinary('v1.bin', firmware(10_000, 'port'))).path }];
  const running = await spawnServer(await writeConfig(first, configDocument(first, port, await artifacts(first), { log_level: 'info' })), `http://127.0.0.1:${port}`);
  t.teardown(async () => {
    running.child.kill('SIGKILL');
    await running.exited;
  });

  // Bounded: a server that wrongly starts is killed at the deadline, which fails the test.
  const result = await runUpdater(['serve', '--config', await writeConfig(second, configDocument(second, port, await artifacts(second), { log_level: 'info' }))], 90_000);
  t.not(result.code, 0, 'the second server exits non-zero');
  t.not(result.code, null, 'on its own, not killed at the deadline');
  t.match(result.stdout + result.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}`), 'naming the address it could not take');
  t.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200, 'the first server still answers');
});
