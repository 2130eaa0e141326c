import { readdir, readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { firmware, freePort, makeFixture, randomHash, sha256Hex } from '../helpers/fixture.js';
import { getBytes, heartbeat, heartbeatUntilSigned } from '../helpers/http.js';
import { configDocument, spawnServer, writeConfig, type ServerProcess } from '../helpers/server.js';
import { storeMismatches } from '../helpers/store-check.js';
import { canMount, mountSmallDisk } from '../helpers/tmpfs.js';
import { needs } from '../helpers/system-tools.js';

const health = async (url: string) => (await fetch(`${url}/health`)).json() as Promise<{ status: string; store: string }>;

async function stop(server: ServerProcess | undefined): Promise<void> {
  if (!server || server.child.exitCode !== null) return;
  server.child.kill('SIGTERM');
  await server.exited;
}

t.test('files cut short under their final names are moved aside at start, never served or signed', needs('zstd', 'bspatch'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(1_500_000, 'si-v2'));
  const stray = await fixture.writeBinary('stray.bin', firmware(300_000, 'si-stray'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const storeDir = join(fixture.dir, 'store');
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [{ name: 'app', version: '2', binary: v2.path }],
    { allow_full_download: true, log_level: 'info' }));
  let server: ServerProcess | undefined = await spawnServer(configPath, url);
  t.teardown(() => stop(server));
  const good = await heartbeatUntilSigned(url, randomHash());
  await stop(server);

  // What a disk that filled up under an older version left behind: a compressed full file cut
  // at a page boundary, and a binary whose bytes are not those its name says.
  const fullName = `${v2.hash}.full.zst`;
  await truncate(join(storeDir, 'deltas', fullName), 4096 * 3);
  const strayName = `${stray.hash}.bin`;
  await writeFile(join(storeDir, 'binaries', strayName), (await readFile(stray.path)).subarray(0, 100_000));

  server = await spawnServer(configPath, url);
  t.match(server.output(), /does not fit its name; moved aside/);
  const aside = await readdir(join(storeDir, 'quarantine'));
  t.ok(aside.some((n) => n.startsWith(fullName)), 'the short full file is in quarantine/');
  t.ok(aside.some((n) => n.startsWith(strayName)), 'the wrong binary is in quarantine/');
  t.equal((await getBytes(`${url}/binary/${stray.hash}`)).status, 404);
  const again = await heartbeatUntilSigned(url, randomHash());
  t.equal(again.delta_size, good.delta_size, 'the full file is made again, at its real size, before it is signed');
  t.equal(again.delta_hash, good.delta_hash);
  t.equal(sha256Hex((await getBytes(`${url}${again.binary_endpoint}`)).body), again.delta_hash);
  t.same(storeMismatches(storeDir), []);
});

t.test('a read-only store starts, serves what it holds and refuses writes with 503 STORE_READ_ONLY', { skip: !canMount && 'needs root to mount a tmpfs' }, async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const disk = await mountSmallDisk(t, join(fixture.dir, 'disk'));
  const v2 = await fixture.writeBinary('v2.bin', firmware(500_000, 'ro-v2'));
  const other = await fixture.writeBinary('other.bin', firmware(200_000, 'ro-other'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [{ name: 'app', version: '2', binary: v2.path }], {
    allow_full_download: true, log_level: 'info',
    store: { dir: join(disk.dir, 'store'), state_file: join(disk.dir, 'state.json') },
  }));
  let server: ServerProcess | undefined = await spawnServer(configPath, url);
  t.teardown(() => stop(server));
  const served = await heartbeatUntilSigned(url, randomHash());
  await stop(server);

  disk.readOnly(true);
  t.teardown(() => disk.readOnly(false));
  server = await spawnServer(configPath, url);
  t.match(server.output(), /store is read-only/);
  t.match(await health(url), { status: 'degraded', store: 'read-only', artifacts: { app: { hash: v2.hash } } });
  const answer = await heartbeat(url, randomHash());
  t.equal(answer.json.delta_hash, served.delta_hash, 'devices are served');
  t.equal(sha256Hex((await getBytes(`${url}${served.binary_endpoint}`)).body), served.delta_hash);
  const refused = await adminCall(url, 'POST', '/admin/artifacts', { name: 'other', version: '1', binary: other.path });
  t.equal(refused.status, 503);
  t.equal(refused.json.error.code, 'STORE_READ_ONLY');

  disk.readOnly(false);
  await eventually('the store is writable again', () => health(url), (h) => h.store === 'writable');
  t.equal((await adminCall(url, 'POST', '/admin/artifacts', { name: 'other', version: '1', binary: other.path })).status, 200);
});
