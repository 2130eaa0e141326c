import { appendFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { adminCall, eventually, trackOf } from '../helpers/admin.js';
import { firmware, makeFixture, sha256Hex } from '../helpers/fixture.js';
import { startTestServer } from '../helpers/server.js';

// File-backed tracks follow their files: a changed binary republishes that track alone, and
// only once it has stopped changing.

t.test('a binary replaced by rename republishes its own track and no other', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const a1 = await fixture.writeBinary('a.bin', firmware(20_000, 'w-a1'));
  const b1 = await fixture.writeBinary('b.bin', firmware(20_000, 'w-b1'));
  const server = await startTestServer(fixture, [
    { name: 'a', version: '1', binary: a1.path },
    { name: 'b', version: '1', binary: b1.path },
  ], { default_artifact: 'a', store: { watch_settle: '300ms', full_compression_level: 1 } });
  t.teardown(() => server.stop());

  const a2 = firmware(20_000, 'w-a2');
  await writeFile(join(fixture.dir, 'a.tmp'), a2);
  await rename(join(fixture.dir, 'a.tmp'), a1.path);
  const a = await eventually('track a follows its file', () => trackOf(server.url, 'a'), (track) => track.hash === sha256Hex(a2));
  t.same(a.history, [a1.hash], 'the old target became a delta source');
  const b = await trackOf(server.url, 'b');
  t.equal(b.hash, b1.hash, 'track b was not touched');
  t.same(b.history, [], 'track b got no history entry');
});

t.test('an API track published from a path is watched too, and stops being watched once deleted', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const app = await fixture.writeBinary('app.bin', firmware(10_000, 'w-app'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '1', binary: app.path }], { store: { watch_settle: '300ms', full_compression_level: 1 } });
  t.teardown(() => server.stop());
  const tool1 = await fixture.writeBinary('tool.bin', firmware(10_000, 'w-tool1'));
  t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'tool', version: '1', binary: tool1.path })).status, 200);
  const tool2 = await fixture.writeBinary('tool.bin', firmware(10_000, 'w-tool2'));
  await eventually('the API track follows its file', () => trackOf(server.url, 'tool'), (track) => track.hash === tool2.hash);
  t.pass('republished from its file');

  t.equal((await adminCall(server.url, 'DELETE', '/admin/artifacts?artifact=tool')).status, 200);
  await fixture.writeBinary('tool.bin', firmware(10_000, 'w-tool3'));
  // A barrier: change the configured binary after tool's, and wait until it is republished;
  // by then a watcher still following tool.bin would have fired as well.
  const app2 = await fixture.writeBinary('app.bin', firmware(10_000, 'w-app2'));
  await eventually('the configured track follows its file', () => trackOf(server.url, 'app'), (track) => track.hash === app2.hash);
  const list = await adminCall(server.url, 'GET', '/admin/artifacts');
  t.equal(list.json.artifacts.find((x: { artifact: string }) => x.artifact === 'tool'), undefined, 'a deleted track does not come back when its file changes');
});

t.test('a binary being copied in is never published half written', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('app.bin', firmware(50_000, 'h-v1'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '1', binary: v1.path }], { store: { watch_settle: '1500ms', full_compression_level: 1 } });
  t.teardown(() => server.stop());

  // A slow copy in place: 40 pieces, a pause well below the settle time between each.
  const v2 = firmware(400_000, 'h-v2');
  const piece = v2.length / 40;
  await writeFile(v1.path, v2.subarray(0, piece));
  for (let i = 1; i < 40; i++) {
    await new Promise((r) => setTimeout(r, 50));
    await appendFile(v1.path, v2.subarray(i * piece, (i + 1) * piece));
  }
  const track = await eventually('the finished file is published', () => trackOf(server.url, 'app'), (x) => x.hash === sha256Hex(v2));
  t.equal(track.size, v2.length);
  t.same(track.history, [v1.hash], 'no partial file was ever the target: history holds only the previous version');
});
