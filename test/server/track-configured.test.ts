import { join } from 'node:path';
import t from 'tap';
import { adminCall, trackOf } from '../helpers/admin.js';
import { createTestDatabase, ENGINES } from '../helpers/databases.js';
import { firmware, makeFixture } from '../helpers/fixture.js';
import { heartbeat } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';

// Issue 36, item 8: an API publish onto a track the configuration file names was taken back by
// the next start (configuration wins), offering the fleet the old build again under a new,
// higher sequence with only a WARN. The operator's write is refused instead, with 409
// TRACK_CONFIGURED naming the file; the track, its sequence and what devices are offered stay
// as they were, across a restart too. On SQLite with a state file and on PostgreSQL, where the
// tracks live in the database.

t.setTimeout(240_000);

for (const engine of ENGINES) {
  t.test(`${engine}: API writes to a configured track are refused with 409 naming the file`, async (t) => {
    const fixture = await makeFixture('updater-track-configured-');
    t.teardown(() => fixture.cleanup());
    const database = await createTestDatabase(engine, fixture.dir);
    t.teardown(() => database.drop());
    const v1 = await fixture.writeBinary('app-1.bin', firmware(20_000, 'configured-1'));
    const v2 = await fixture.writeBinary('app-2.bin', firmware(20_000, 'configured-2'));
    const overrides = {
      database: database.location,
      store: engine === 'sqlite' ? { state_file: join(fixture.dir, 'state.json'), watch_settle: '1h' } : { watch_settle: '1h' },
      log_level: 'error',
    };
    let server = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: v1.path }], overrides);
    t.teardown(() => server.stop());
    const before = await trackOf(server.url, 'app');
    t.equal(before.hash, v1.hash);

    const writes: [string, () => ReturnType<typeof adminCall>][] = [
      ['a publish of another file', () => adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version: '2.0.0', binary: v2.path })],
      ['a publish with a rollout', () => adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version: '2.0.0', binary: v2.path, rollout: { steps: [10, 100] } })],
      ['a publish by hash', () => adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version: '1.0.1', hash: v1.hash })],
      ['a delete', () => adminCall(server.url, 'DELETE', '/admin/artifacts?artifact=app')],
    ];
    for (const [what, write] of writes) {
      const answer = await write();
      t.equal(answer.status, 409, `${what} is refused`);
      t.equal(answer.json?.error?.code, 'TRACK_CONFIGURED', what);
      t.match(answer.json?.error?.message, server.configPath, `${what}: the message names the configuration file`);
    }
    t.same(await trackOf(server.url, 'app'), before, 'the track is as it was: target, version, sequence');
    const offered = await heartbeat(server.url, 'c'.repeat(64), 'app');
    t.equal(offered.json.target_hash, v1.hash, 'devices are offered the configured build');

    const tool = await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'tool', version: '1', binary: v2.path });
    t.equal(tool.status, 200, 'a track the configuration does not name is published as before');
    t.equal((await adminCall(server.url, 'POST', '/admin/reload', { artifact: 'app' })).status, 200, 'a reload of the configured file is allowed');

    await server.stop();
    server = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: v1.path }], overrides);
    const after = await trackOf(server.url, 'app');
    t.equal(after.hash, v1.hash, 'after a restart the configured build is served');
    t.equal(after.sequence, before.sequence, 'under the same sequence: nothing was undone');
    t.equal((await trackOf(server.url, 'tool'))?.hash, v2.hash, 'the API track survives the restart');
  });
}
