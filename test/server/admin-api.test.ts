import { access, mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { adminCall, listTracks, trackOf } from '../helpers/admin.js';
import { ADMIN_TOKEN, firmware, makeFixture, sha256Hex } from '../helpers/fixture.js';
import { heartbeat, heartbeatUntilSigned, metricValue } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';
import { mallocTrim } from '../../src/supervisor/malloc-trimmer.js';

// Every admin endpoint over real HTTP against the real server. The watcher is given a long
// settle time here so that only explicit calls republish anything.
const QUIET_WATCH = { store: { watch_settle: '1h', full_compression_level: 1 }, allow_full_download: true };

t.test('the admin API manages tracks through their whole lifecycle', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const app = await fixture.writeBinary('app.bin', firmware(100_000, 'app-1'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: app.path }], {
    ...QUIET_WATCH,
    retention: { history_depth: 2 },
  });
  t.teardown(() => server.stop());

  t.test('GET /admin/artifacts lists the configured track and the inferred default', async (t) => {
    const list = await listTracks(server.url);
    t.equal(list.default, 'app');
    // Each track also names the sequence of its release statement (docs/protocol.md): a positive integer.
    const [{ sequence, ...track }] = list.artifacts;
    t.ok(Number.isSafeInteger(sequence) && sequence > 0, 'the release sequence is listed');
    t.same([track], [{ artifact: 'app', name: 'app', os: '', arch: '', version: '1.0.0', hash: app.hash, size: app.size, source: 'config', binary: app.path, history: [], rollout: null }]);
  });

  const tool1 = await fixture.writeBinary('tool-1.bin', firmware(50_000, 'tool-1'));
  t.test('POST /admin/artifacts publishes a new track that devices can then resolve', async (t) => {
    const { status, json } = await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'tool', os: 'linux', arch: 'arm64', version: '1', binary: tool1.path });
    t.equal(status, 200);
    t.match(json, { artifact: 'tool/linux/arm64', hash: tool1.hash, size: tool1.size, source: 'api', history: [], changed: true });
    const hb = await heartbeat(server.url, sha256Hex(Buffer.from('x')), 'tool/linux/arm64');
    t.equal(hb.status, 200);
    t.equal(hb.json.target_hash, tool1.hash);
  });

  t.test('republishing identical bytes changes nothing a device sees', async (t) => {
    const device = sha256Hex(Buffer.from('unknown device binary'));
    const before = await heartbeatUntilSigned(server.url, device, 'tool/linux/arm64');
    const cachedEntries = async () => metricValue(await (await fetch(`${server.url}/metrics`)).text(), 'updater_signed_manifest_cache_entries');
    const entriesBefore = await cachedEntries();
    t.ok(entriesBefore > 0, 'the signed manifest is cached');
    const again = await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'tool', os: 'linux', arch: 'arm64', version: '1', binary: tool1.path });
    t.equal(again.status, 200);
    t.equal(again.json.changed, false, 'reported as a no-op');
    t.same(again.json.history, [], 'no history entry');
    const after = await heartbeat(server.url, device, 'tool/linux/arm64');
    t.same(after.json, before, 'the same signed manifest, byte for byte');
    t.equal(await cachedEntries(), entriesBefore, 'no signed manifest was dropped from the cache');
  });

  t.test('a new target pushes the old one into history, kept to retention.history_depth', async (t) => {
    const versions = [2, 3, 4].map((n) => firmware(50_000, `tool-${n}`));
    const published: string[] = [];
    for (const [i, bytes] of versions.entries()) {
      const file = await fixture.writeBinary(`tool-${i + 2}.bin`, bytes);
      const { status, json } = await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'tool', os: 'linux', arch: 'arm64', version: String(i + 2), binary: file.path });
      t.equal(status, 200);
      t.equal(json.changed, true);
      published.push(file.hash);
    }
    const track = await trackOf(server.url, 'tool/linux/arm64');
    t.equal(track.hash, published[2]);
    t.same(track.history, [published[1], published[0]], 'newest first, two entries (history_depth 2)');
    const hb = await heartbeat(server.url, tool1.hash, 'tool/linux/arm64');
    t.equal(hb.json.target_hash, published[2], 'devices on an old version are offered the new target');
    t.equal(hb.json.update_available, true);
  });

  t.test('POST /admin/default selects the track for heartbeats that name none', async (t) => {
    const set = await adminCall(server.url, 'POST', '/admin/default', { artifact: 'tool/linux/arm64' });
    t.equal(set.status, 200);
    t.same(set.json, { default: 'tool/linux/arm64' });
    const hb = await heartbeat(server.url, sha256Hex(Buffer.from('y')));
    t.equal(hb.json.artifact, 'tool/linux/arm64');
    t.equal((await listTracks(server.url)).default, 'tool/linux/arm64');
    const unknown = await adminCall(server.url, 'POST', '/admin/default', { artifact: 'nope' });
    t.equal(unknown.status, 404);
    t.equal(unknown.json.error.code, 'ARTIFACT_NOT_FOUND');
    t.equal((await adminCall(server.url, 'POST', '/admin/default', { artifact: 'app' })).status, 200);
  });

  t.test('DELETE /admin/artifacts removes the track but leaves its bytes in the store', async (t) => {
    const track = await trackOf(server.url, 'tool/linux/arm64');
    const del = await adminCall(server.url, 'DELETE', '/admin/artifacts?artifact=tool%2Flinux%2Farm64');
    t.equal(del.status, 200);
    t.equal(del.json.deleted.hash, track.hash);
    t.equal(await trackOf(server.url, 'tool/linux/arm64'), undefined);
    t.equal((await heartbeat(server.url, track.hash, 'tool/linux/arm64')).status, 404, 'devices get 404 for the deleted track');
    await t.resolves(access(join(fixture.dir, 'store', 'binaries', `${track.hash}.bin`)), 'the binary is still stored');
    const again = await adminCall(server.url, 'DELETE', '/admin/artifacts?artifact=tool/linux/arm64');
    t.equal(again.status, 404);
    t.equal(again.json.error.code, 'ARTIFACT_NOT_FOUND');
    const missing = await adminCall(server.url, 'DELETE', '/admin/artifacts');
    t.equal(missing.status, 400, 'the artifact parameter is required');
  });

  t.test('POST /admin/gc sweeps at once and answers what it removed', async (t) => {
    const gc = await adminCall(server.url, 'POST', '/admin/gc');
    t.equal(gc.status, 200);
    t.same(Object.keys(gc.json.removed).sort(), ['binaries', 'deltas', 'full']);
    t.type(gc.json.bytes_freed, 'number');
  });

  t.test('POST /admin/memory answers every thread\'s live memory', async (t) => {
    const trims = async () => metricValue(await (await fetch(`${server.url}/metrics`)).text(), 'updater_malloc_trims_total');
    const trimsBefore = await trims();
    const memory = await adminCall(server.url, 'POST', '/admin/memory');
    t.equal(memory.status, 200);
    t.same(Object.keys(memory.json.threads).sort(), ['fleet', 'http', 'manifester', 'store-keeper', 'supervisor', 'sweeper']);
    for (const [thread, m] of Object.entries(memory.json.threads as Record<string, Record<string, number>>)) {
      t.ok(m.heap_used! > 1024 * 1024 && m.heap_used! <= m.heap_total!, `${thread}: heap used ${m.heap_used} of ${m.heap_total}`);
      t.ok(m.external! > 0 && m.array_buffers! >= 0, `${thread}: external and array buffers are figures`);
    }
    t.ok(memory.json.rss > 10 * 1024 * 1024, 'the process RSS');
    // At least one where glibc has malloc_trim: the supervisor may also have trimmed on its own meanwhile.
    const glibc = 'trim' in mallocTrim();
    t.ok(await trims() >= trimsBefore + (glibc ? 1 : 0), 'measured after glibc\'s free memory was handed back');
    t.equal((await adminCall(server.url, 'GET', '/admin/memory')).status, 405, 'only POST');
  });

  t.test('POST /admin/loglevel applies to the supervisor and every actor', async (t) => {
    const ok = await adminCall(server.url, 'POST', '/admin/loglevel', { level: 'error' });
    t.equal(ok.status, 200);
    t.equal(ok.json.level, 'error');
    t.same([...ok.json.applied].sort(), ['fleet', 'http', 'manifester', 'store-keeper', 'supervisor', 'sweeper']);
    const bad = await adminCall(server.url, 'POST', '/admin/loglevel', { level: 'loud' });
    t.equal(bad.status, 400);
    t.equal(bad.json.error.code, 'INVALID_FIELD');
  });
});

t.test('admin input is validated at the boundary', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const app = await fixture.writeBinary('app.bin', firmware(10_000, 'v-app'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '1', binary: app.path }], QUIET_WATCH);
  t.teardown(() => server.stop());
  const publish = (fields: Record<string, unknown>) => adminCall(server.url, 'POST', '/admin/artifacts', { version: '1', binary: app.path, ...fields });

  for (const [why, fields] of [
    ['a name outside the charset', { name: 'my app' }],
    ['the name ..', { name: '..' }],
    ['the name .', { name: '.' }],
    ['os without arch', { name: 'x', os: 'linux' }],
    ['arch without os', { name: 'x', arch: 'arm64' }],
    ['an uppercase os token', { name: 'x', os: 'Linux', arch: 'arm64' }],
  ] as const) {
    const { status, json } = await publish(fields);
    t.equal(status, 400, `${why} is refused`);
    t.equal(json.error.code, 'INVALID_ARTIFACT_KEY', `${why}: INVALID_ARTIFACT_KEY`);
  }
  for (const key of ['..', 'a/linux', 'a//arm64', 'a/Linux/arm64']) {
    const reload = await adminCall(server.url, 'POST', '/admin/reload', { artifact: key });
    t.equal(reload.json.error.code, 'INVALID_ARTIFACT_KEY', `reload refuses ${key}`);
    const del = await adminCall(server.url, 'DELETE', `/admin/artifacts?artifact=${encodeURIComponent(key)}`);
    t.equal(del.json.error.code, 'INVALID_ARTIFACT_KEY', `delete refuses ${key}`);
  }

  const missing = await publish({ name: 'x', binary: join(fixture.dir, 'does-not-exist.bin') });
  t.equal(missing.status, 422);
  t.equal(missing.json.error.code, 'SOURCE_UNREADABLE');
  t.match(missing.json.error.message, /does-not-exist\.bin/, 'the message names the path');
  await mkdir(join(fixture.dir, 'a-directory'));
  const dir = await publish({ name: 'x', binary: join(fixture.dir, 'a-directory') });
  t.equal(dir.status, 422, 'a directory is not a binary');
  t.equal(dir.json.error.code, 'SOURCE_UNREADABLE');
  const relative = await publish({ name: 'x', binary: 'app.bin' });
  t.equal(relative.status, 400, 'a relative path is refused');
  const noVersion = await publish({ name: 'x', version: '' });
  t.equal(noVersion.json.error.code, 'INVALID_FIELD');
  const unknownField = await publish({ name: 'x', colour: 'blue' });
  t.equal(unknownField.json.error.code, 'INVALID_FIELD');
  const notJson = await adminCall(server.url, 'POST', '/admin/artifacts', '{"name":');
  t.equal(notJson.json.error.code, 'MALFORMED_BODY');
  const huge = await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'x', version: '1', binary: `/${'a'.repeat(20_000)}` });
  t.equal(huge.status, 413, 'an oversize body is refused');
  t.equal(huge.json.error.code, 'BODY_TOO_LARGE');
  t.equal((await listTracks(server.url)).artifacts.length, 1, 'nothing was published by any of these');

  const wrongMethod = await adminCall(server.url, 'PUT', '/admin/artifacts');
  t.equal(wrongMethod.status, 405);
  const unknownPath = await adminCall(server.url, 'GET', '/admin/nothing-here');
  t.equal(unknownPath.status, 404);
  const unknownPathNoToken = await adminCall(server.url, 'GET', '/admin/nothing-here', undefined, null);
  t.equal(unknownPathNoToken.status, 401, 'every /admin path is authenticated before anything else');
});

t.test('reload republishes file-backed tracks; a targeted reload touches that track alone', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const a1 = await fixture.writeBinary('a.bin', firmware(20_000, 'a1'));
  const b1 = await fixture.writeBinary('b.bin', firmware(20_000, 'b1'));
  const server = await startTestServer(fixture, [
    { name: 'a', version: '1', binary: a1.path },
    { name: 'b', version: '1', binary: b1.path },
  ], { ...QUIET_WATCH, default_artifact: 'a' });
  t.teardown(() => server.stop());
  const c1 = await fixture.writeBinary('c.bin', firmware(20_000, 'c1'));
  t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'c', version: '1', binary: c1.path })).status, 200);

  // New bytes behind all three paths (replaced by rename, as a deployment does).
  const next: Record<string, string> = {};
  for (const name of ['a', 'b', 'c']) {
    const bytes = firmware(20_000, `${name}2`);
    await writeFile(join(fixture.dir, `${name}.new`), bytes);
    await rename(join(fixture.dir, `${name}.new`), join(fixture.dir, `${name}.bin`));
    next[name] = sha256Hex(bytes);
  }

  const targeted = await adminCall(server.url, 'POST', '/admin/reload', { artifact: 'b' });
  t.equal(targeted.status, 200);
  t.same(targeted.json, { reloaded: ['b'], changed: ['b'], failed: [] });
  t.equal((await trackOf(server.url, 'b')).hash, next.b);
  t.equal((await trackOf(server.url, 'a')).hash, a1.hash, 'track a was not republished');
  t.equal((await trackOf(server.url, 'c')).hash, c1.hash, 'track c was not republished');
  t.same((await trackOf(server.url, 'b')).history, [b1.hash]);

  const unknown = await adminCall(server.url, 'POST', '/admin/reload', { artifact: 'zzz' });
  t.equal(unknown.status, 404);

  const all = await adminCall(server.url, 'POST', '/admin/reload');
  t.equal(all.status, 200);
  t.same([...all.json.reloaded].sort(), ['a', 'b', 'c']);
  t.same([...all.json.changed].sort(), ['a', 'c'], 'b was already current: reloading it again is a no-op');
  t.equal((await trackOf(server.url, 'a')).hash, next.a);
  t.equal((await trackOf(server.url, 'c')).hash, next.c);
  t.equal((await trackOf(server.url, 'c')).source, 'api', 'an API track published from a path is file-backed too');
});

t.test('authentication: 401 while the failure bucket has tokens, then 429; the valid token is never throttled', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const app = await fixture.writeBinary('app.bin', firmware(10_000, 'auth'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '1', binary: app.path }], {
    ...QUIET_WATCH,
    admin: { auth_failure_burst: 5, auth_failure_refill_per_second: 1 },
  });
  t.teardown(() => server.stop());

  const none = await adminCall(server.url, 'GET', '/admin/artifacts', undefined, null);
  t.equal(none.status, 401, 'no Authorization header');
  t.equal(none.json.error.code, 'UNAUTHORIZED');
  const prefix = await adminCall(server.url, 'GET', '/admin/artifacts', undefined, ADMIN_TOKEN.slice(0, -1));
  t.equal(prefix.status, 401, 'a prefix of the token');
  const longer = await adminCall(server.url, 'GET', '/admin/artifacts', undefined, `${ADMIN_TOKEN}x`);
  t.equal(longer.status, 401, 'the token plus one character');

  const statuses = new Map<number, number>();
  let lastRetryAfter: string | null = null;
  for (let i = 0; i < 1000; i++) {
    const bad = await adminCall(server.url, 'GET', '/admin/artifacts', undefined, `wrong-token-${i}`);
    statuses.set(bad.status, (statuses.get(bad.status) ?? 0) + 1);
    if (bad.status === 429) lastRetryAfter = bad.headers.get('retry-after');
  }
  t.same([...statuses.keys()].sort(), [401, 429], 'only 401 and 429 answers');
  t.ok((statuses.get(429) ?? 0) > 900, `most of 1,000 bad requests are throttled (${statuses.get(429)})`);
  t.equal(lastRetryAfter, '1', '429 carries Retry-After: 1');

  const valid = await adminCall(server.url, 'GET', '/admin/artifacts');
  t.equal(valid.status, 200, 'the valid token succeeds at once although the bucket is empty');
  for (let i = 0; i < 50; i++) {
    if ((await adminCall(server.url, 'GET', '/admin/artifacts')).status !== 200) t.fail('a valid request was throttled');
  }
});
