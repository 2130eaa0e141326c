import { join } from 'node:path';
import t, { type Test } from 'tap';
import { PROBE_INTERVAL_MS } from '../../src/actors/store-keeper/writability.js';
import { adminCall, eventually } from '../helpers/admin.js';
import { failingDiskMissing, mountFailingDisk } from '../helpers/failing-disk.js';
import { firmware, freePort, makeFixture, randomHash, type Fixture } from '../helpers/fixture.js';
import { getBytes, heartbeat, heartbeatUntilSigned, metricValue, postJson } from '../helpers/http.js';
import { configDocument, spawnServer, writeConfig, type ServerProcess } from '../helpers/server.js';
import { canMount, mountSmallDisk } from '../helpers/tmpfs.js';

// /health and updater_store_condition tell the truth about the store within one probe interval
// of a change made under a running server, before any publish or device trips on it: a
// read-only remount, a disk filled by another process, and an ext4 disk that an I/O error
// turns read-only under the server's open database (the default layout).

const health = async (url: string) => (await fetch(`${url}/health`)).json() as Promise<{ status: string; store: string }>;
const metrics = async (url: string) => (await getBytes(`${url}/metrics`)).body.toString();
/** Several intervals: a loaded machine may delay a probe, never by this much. */
const SEEN_WITHIN_MS = 5 * PROBE_INTERVAL_MS;

async function serve(t: Test, fixture: Fixture, store: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<{ url: string; server: ServerProcess }> {
  const app = await fixture.writeBinary('app.bin', firmware(50_000, 'sh-app'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [{ name: 'app', version: '1', binary: app.path }], {
    allow_full_download: true, log_level: 'info', store, ...extra,
  }));
  const server = await spawnServer(configPath, url);
  t.teardown(async () => {
    server.child.kill('SIGKILL');
    await server.exited;
  });
  await heartbeatUntilSigned(url, randomHash(), 'app');
  t.match(await health(url), { status: 'ok', store: 'writable' }, 'healthy while writable');
  return { url, server };
}

/** Waits for /health to say `condition`; answers how long it took. */
async function seen(url: string, condition: string): Promise<number> {
  const started = Date.now();
  await eventually(`/health says ${condition}`, () => health(url), (h) => h.store === condition, SEEN_WITHIN_MS);
  return Date.now() - started;
}

t.test('a store remounted read-only under a running server is seen by /health within the probe interval', { skip: !canMount && 'needs root to mount a tmpfs' }, async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const disk = await mountSmallDisk(t, join(fixture.dir, 'disk'));
  // The database stays off the tmpfs: the kernel refuses a read-only remount while it is open for writing.
  const { url } = await serve(t, fixture, { dir: join(disk.dir, 'store'), state_file: join(fixture.dir, 'state.json') }, { database: join(fixture.dir, 'fleet.db') });
  const other = await fixture.writeBinary('other.bin', firmware(20_000, 'sh-other'));

  disk.readOnly(true);
  t.teardown(() => disk.readOnly(false));
  const ms = await seen(url, 'read-only');
  t.pass(`seen ${ms} ms after the remount (probe every ${PROBE_INTERVAL_MS} ms)`);
  t.match(await health(url), { status: 'degraded', store: 'read-only' });
  const text = await metrics(url);
  t.equal(metricValue(text, 'updater_store_condition', { condition: 'read-only' }), 1, 'the metric says read-only');
  t.equal(metricValue(text, 'updater_store_condition', { condition: 'writable' }), 0);
  const refused = await adminCall(url, 'POST', '/admin/artifacts', { name: 'other', version: '1', binary: other.path });
  t.equal(refused.json?.error?.code, 'STORE_READ_ONLY', 'the first refused publish comes after /health said so');
  t.equal((await heartbeat(url, randomHash(), 'app')).status, 200, 'devices are still answered');

  disk.readOnly(false);
  await seen(url, 'writable');
  t.equal((await adminCall(url, 'POST', '/admin/artifacts', { name: 'other', version: '1', binary: other.path })).status, 200);
});

t.test('a store filled by another process is seen as full by /health within the probe interval', { skip: !canMount && 'needs root to mount a tmpfs' }, async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const disk = await mountSmallDisk(t, join(fixture.dir, 'disk'));
  const { url } = await serve(t, fixture, { dir: join(disk.dir, 'store'), state_file: join(disk.dir, 'state.json') });
  t.ok(metricValue(await metrics(url), 'updater_store_free_bytes') > 1_000_000, 'free space is measured');

  await disk.fillLeaving(0);
  const ms = await seen(url, 'full');
  t.pass(`seen ${ms} ms after the disk filled (probe every ${PROBE_INTERVAL_MS} ms)`);
  const text = await metrics(url);
  t.equal(metricValue(text, 'updater_store_condition', { condition: 'full' }), 1, 'the metric says full');
  t.ok(metricValue(text, 'updater_store_free_bytes') < 64 * 1024, 'and so does the free space');
  t.equal((await heartbeat(url, randomHash(), 'app')).status, 200, 'devices are still answered');

  await disk.unfill();
  await seen(url, 'writable');
});

const missing = failingDiskMissing();
t.test('the default layout on a disk that an I/O error turns read-only: what the operator sees', { skip: missing !== undefined && !process.env.CI && missing }, async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const disk = await mountFailingDisk(t, join(fixture.dir, 'disk'));
  // The database (updater.db) and the state file inside store.dir, as a default installation has them.
  const storeDir = join(disk.dir, 'store');
  const { url, server } = await serve(t, fixture, { dir: storeDir, state_file: join(storeDir, 'state.json') }, { fleet: { flush_interval: '100ms' } });
  const other = await fixture.writeBinary('other.bin', firmware(20_000, 'sh-other'));

  disk.fail();
  const ms = await seen(url, 'read-only');
  t.pass(`seen ${ms} ms after the file system went read-only (probe every ${PROBE_INTERVAL_MS} ms)`);
  await server.logged(/store is read-only: serving what it holds/);
  t.pass('the log says so at error level');
  const refused = await adminCall(url, 'POST', '/admin/artifacts', { name: 'other', version: '1', binary: other.path });
  t.equal(refused.status, 503);
  t.equal(refused.json?.error?.code, 'STORE_READ_ONLY');
  // Devices are answered from memory; the inventory cannot be written and says so.
  for (let i = 0; i < 5; i++) t.equal((await heartbeat(url, randomHash(), 'app')).status, 200, 'a heartbeat is answered');
  const report = await postJson(`${url}/report`, { device_id: 'device-0001', previous_hash: randomHash(), new_hash: randomHash(), success: true, timestamp: Math.floor(Date.now() / 1000) });
  t.ok(report.status < 300, `a report is accepted (${report.status})`);
  await eventually('fleet flushes fail', () => metrics(url), (text) => metricValue(text, 'updater_fleet_flush_failures_total') > 0, SEEN_WITHIN_MS);
  await server.logged(/fleet flush failed; records kept for the next one/);
  t.pass('the log says the records are kept');
  t.match(await health(url), { status: 'degraded', store: 'read-only' }, 'still degraded: an error-mounted ext4 stays read-only until unmounted and checked');
});
