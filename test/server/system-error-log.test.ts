import { rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { firmware, freePort, makeFixture, sha256Hex } from '../helpers/fixture.js';
import { getBytes, heartbeatUntilSigned } from '../helpers/http.js';
import { configDocument, spawnServer, writeConfig } from '../helpers/server.js';

// A Node system error (here ELOOP: a stored file replaced behind the server's back by a
// symlink to itself) is the server's own failure: answered as INTERNAL without detail, and
// logged at error level. (A file that is simply gone, ENOENT, is what retention leaves: the
// transfer is not found, 404.) The server runs as its own process so its log stays out of the
// test output.
t.test('a system error while serving is answered 500 INTERNAL and logged at error level', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(100_000, 'sys-err'));
  const port = await freePort();
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [{ name: 'app', version: '2', binary: v2.path }], {
    allow_full_download: true,
    log_level: 'info', // spawnServer waits for "server started"
    store: { hot_delta_cache_mb: 0 },
  }));
  const server = await spawnServer(configPath, `http://127.0.0.1:${port}`);
  t.teardown(async () => {
    server.child.kill('SIGKILL');
    await server.exited;
  });
  const manifest = await heartbeatUntilSigned(server.url, sha256Hex(Buffer.from('stranger')));
  const stored = join(fixture.dir, 'store', 'deltas', `${v2.hash}.full.zst`);
  await rm(stored);
  await symlink(stored, stored);

  const answer = await getBytes(`${server.url}${manifest.binary_endpoint}`);
  t.equal(answer.status, 500);
  const error = JSON.parse(answer.body.toString()).error;
  t.equal(error.code, 'INTERNAL');
  t.notMatch(error.message, /ELOOP|deltas/, 'no path or system detail on the wire');
  const deadline = Date.now() + 30_000;
  const logged = () => server.output().split('\n').find((line) => line.includes('"request failed"'));
  while (!logged() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const line = logged();
  t.ok(line, 'the failure is logged');
  t.match(line ?? '', /"level":50/, 'at error level');
  t.match(line ?? '', /ELOOP/, 'with the system error');
});
