import { join } from 'node:path';
import t from 'tap';
import { adminCall } from '../helpers/admin.js';
import { firmware, freePort, makeFixture } from '../helpers/fixture.js';
import { configDocument, spawnServer, writeConfig } from '../helpers/server.js';

// Configuration wins for its own tracks at every start. The API refuses to publish onto them
// (TRACK_CONFIGURED, test/server/track-configured.test.ts), but a state file can still hold an
// API build on a track the configuration names since: an operator who adds to the configuration a
// track first published through the API. The start takes it back to the configured build, which
// can be a downgrade, and says so at WARN, naming both versions.
t.test('a restart that replaces an API-published build on a newly configured track logs WARN with both versions', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const app1 = await fixture.writeBinary('app-1.bin', firmware(20_000, 'w-app-1'));
  const app2 = await fixture.writeBinary('app-2.bin', firmware(20_000, 'w-app-2'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const configured = (artifacts: { name: string; version: string; binary: string }[]) => writeConfig(fixture, configDocument(fixture, port, artifacts, {
    log_level: 'info', // spawnServer waits for "server started"
    store: { state_file: join(fixture.dir, 'state.json'), watch_settle: '1h' },
  }));
  const first = await spawnServer(await configured([]), url);
  t.equal((await adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '2.0.0-hotfix', binary: app2.path })).status, 200);
  first.child.kill('SIGTERM');
  t.equal(await first.exited, 0);
  t.notMatch(first.output(), /configuration replaces/, 'nothing to warn about on the first start');

  const second = await spawnServer(await configured([{ name: 'app', version: '1.0.0', binary: app1.path }]), url);
  t.teardown(async () => {
    second.child.kill('SIGKILL');
    await second.exited;
  });
  const line = second.output().split('\n').find((l) => l.includes('configuration replaces the recorded target'));
  t.ok(line, 'the replacement is logged');
  const entry = JSON.parse(line ?? '{}');
  t.equal(entry.level, 40, 'at WARN');
  t.same(entry.replaced, { version: '2.0.0-hotfix', hash: app2.hash }, 'naming the API build it replaces');
  t.same(entry.by, { version: '1.0.0', hash: app1.hash }, 'and the configured build devices get now');
});
