import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { firmware, freePort, makeFixture, nextVersion, randomHash, sha256Hex } from '../helpers/fixture.js';
import { getBytes, heartbeat, heartbeatUntilSigned } from '../helpers/http.js';
import { configDocument, spawnServer, writeConfig, type ServerProcess } from '../helpers/server.js';
import { storeMismatches } from '../helpers/store-check.js';
import { needs } from '../helpers/system-tools.js';
import { canMount, mountSmallDisk } from '../helpers/tmpfs.js';

// The store on a 12 MB tmpfs, driven into ENOSPC by publishes, full-file compression and
// delta generation: no file under a final name ever fails to fit its name, devices keep
// being served, writes come back when space frees, and a restart while full still serves.

const health = async (url: string) => (await fetch(`${url}/health`)).json() as Promise<{ status: string; store: string }>;

t.test('a store driven into ENOSPC never holds a short file and keeps serving', canMount ? needs('zstd', 'bspatch') : { skip: 'needs root to mount a tmpfs' }, async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const disk = await mountSmallDisk(t, join(fixture.dir, 'disk'));
  const v1 = await fixture.writeBinary('v1.bin', firmware(1_000_000, 'df-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'df-v2'));
  const big = await fixture.writeBinary('big.bin', firmware(2_000_000, 'df-big'));
  const sources = new Map([[v1.hash, v1.path], [v2.hash, v2.path], [big.hash, big.path]]);
  const storeDir = join(disk.dir, 'store');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [
    { name: 'app', version: '2', binary: v2.path },
    { name: 'legacy', version: '1', binary: v1.path },
  ], { default_artifact: 'app', allow_full_download: true, log_level: 'info', store: { dir: storeDir, state_file: join(disk.dir, 'state.json'), delta_concurrency: 1 } }));

  let server: ServerProcess | undefined = await spawnServer(configPath, url);
  t.teardown(async () => {
    server?.child.kill('SIGKILL');
    await server?.exited;
  });
  const served = await heartbeatUntilSigned(url, randomHash(), 'app');
  t.same(await health(url), { status: 'ok', store: 'writable', artifacts: (await health(url) as any).artifacts }, 'healthy while writable');

  await t.test('a publish that does not fit answers 507 STORE_FULL and stores nothing', async (t) => {
    await disk.fillLeaving(1_500_000);
    const answer = await adminCall(url, 'POST', '/admin/artifacts', { name: 'big', version: '1', binary: big.path });
    t.equal(answer.status, 507);
    t.equal(answer.json.error.code, 'STORE_FULL');
    t.same(storeMismatches(storeDir, sources), [], 'every stored file fits its name');
    t.match(await health(url), { status: 'degraded', store: 'full' });
    const still = await heartbeat(url, randomHash(), 'app');
    t.equal(still.status, 200);
    t.equal(still.json.delta_hash, served.delta_hash, 'devices are still served the existing file');
    const { body } = await getBytes(`${url}${served.binary_endpoint}`);
    t.equal(sha256Hex(body), served.delta_hash, 'and can download it');
  });

  await t.test('a compressed file or delta that does not fit is never published', async (t) => {
    await disk.unfill();
    await disk.fillLeaving(2_600_000);
    await eventually('the store is writable again', () => health(url), (h) => h.store === 'writable');
    const published = await adminCall(url, 'POST', '/admin/artifacts', { name: 'big', version: '1', binary: big.path });
    t.equal(published.status, 200, 'the binary itself fits');
    // Its compressed full file (2 MB of incompressible bytes) cannot fit any more.
    const pending = await heartbeat(url, randomHash(), 'big');
    t.ok(pending.json.retry_after > 0, 'devices wait instead of getting a short file');
    // A delta needs scratch space for the rebuilt target: it cannot be made either.
    await disk.fillLeaving(200_000);
    const delta = await heartbeat(url, v1.hash, 'app');
    t.ok(delta.json.retry_after > 0);
    // Each check takes again any space freed since, and asks again as waiting devices do. Once,
    // in a loaded CI run, the store never reported full within 30 s of a single ask; the cause
    // was not caught (a temporary removed after the filler measured the disk would have left
    // room for the delta), so nothing here depends on when the space was measured.
    await eventually('the store reports itself full', async () => {
      await disk.fillLeaving(200_000);
      await heartbeat(url, v1.hash, 'app');
      await heartbeat(url, randomHash(), 'big');
      return health(url);
    }, (h) => h.store === 'full');
    for (let i = 0; i < 5; i++) await heartbeat(url, v1.hash, 'app');
    t.same(storeMismatches(storeDir, sources), [], 'every stored file fits its name');
    t.equal((await getBytes(`${url}/binary/${big.hash}`)).status, 404, 'nothing half-written is served');
  });

  await t.test('a restart while full starts, serves and says it is full', async (t) => {
    server!.child.kill('SIGTERM');
    t.equal(await server!.exited, 0);
    server = undefined;
    await disk.fillLeaving(0);
    server = await spawnServer(configPath, url);
    t.match(server.output(), /store is full/);
    t.match(await health(url), { status: 'degraded', store: 'full' });
    const again = await heartbeat(url, randomHash(), 'app');
    t.equal(again.json.delta_hash, served.delta_hash);
    t.same(storeMismatches(storeDir, sources), []);
  });

  await t.test('when space frees, writes come back by themselves', async (t) => {
    await disk.unfill();
    await eventually('the store is writable again', () => health(url), (h) => h.store === 'writable');
    const full = await heartbeatUntilSigned(url, randomHash(), 'big');
    t.equal(sha256Hex((await getBytes(`${url}${full.binary_endpoint}`)).body), full.delta_hash);
    const delta = await heartbeatUntilSigned(url, v1.hash, 'app');
    t.equal(sha256Hex((await getBytes(`${url}${delta.delta_endpoint}`)).body), delta.delta_hash);
    t.same(storeMismatches(storeDir, sources), []);
  });
});
