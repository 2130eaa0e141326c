import t from 'tap';
import { encodeHeartbeat, encodeReport } from '../../src/shared/wire/cbor.js';
import { adminCall, eventually } from '../helpers/admin.js';
import { startCoapTestServer } from '../helpers/coap.js';
import type { Engine } from '../../src/shared/database/schema.js';
import { createTestDatabase } from '../helpers/databases.js';
import { firmware, makeFixture, randomHash } from '../helpers/fixture.js';
import { metricValue, postJson } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';

// The inventory end to end, on each engine: heartbeats and reports over HTTP and CoAP reach
// the database after they are answered, the admin calls read them back, bad queries are 400s,
// and the records survive a restart.

const ids = ['dev-c', 'dev-a', 'dev-e', 'dev-b', 'dev-d'];

/** One engine per test file, so that each stays inside the per-file timeout on a loaded machine. */
export function inventoryCase(engine: Engine): void {
  t.test(`${engine}: the inventory records, lists and summarizes the fleet`, async (t) => {
    const fixture = await makeFixture();
    const database = await createTestDatabase(engine, fixture.dir);
    t.teardown(async () => {
      await database.drop();
      await fixture.cleanup();
    });
    const binary = await fixture.writeBinary('app.bin', firmware(4096, 'fleet'));
    const artifacts = [{ name: 'app', os: 'linux', arch: 'arm64', version: '2.0.0', binary: binary.path }];
    const overrides = { database: database.location, fleet: { flush_interval: '100ms' } };
    const { server, client, stop } = await startCoapTestServer(fixture, artifacts, overrides);
    const url = server.url;
    const old = randomHash();

    for (const id of ids) {
      const body = { device_id: id, version_hash: id === 'dev-e' ? binary.hash : old, version: id === 'dev-e' ? '2.0.0' : '1.0.0', hw_info: { arch: 'arm64', os: 'linux', free_ram: 6_000_000_000, free_disk: 1 }, timestamp: 1_800_000_000, ...(id === 'dev-a' ? { artifact: 'app/linux/arm64' } : {}) };
      t.equal((await postJson(`${url}/heartbeat`, body)).status, 200);
    }
    const coap = await client.request({ method: 'POST', path: '/heartbeat', contentFormat: 60, payload: encodeHeartbeat({ device_id: 'dev-coap', version_hash: old, version: '1.0.0', hw_info: { arch: 'arm64', os: 'linux', free_ram: 1, free_disk: 2 }, timestamp: 1_800_000_000 }) });
    t.equal(coap.code, '2.05');
    t.equal((await postJson(`${url}/heartbeat`, { device_id: 'dev-stray', version_hash: old, version: '1', hw_info: { arch: 'arm64', os: 'linux', free_ram: 1, free_disk: 2 }, timestamp: 1_800_000_000, artifact: 'nope' })).status, 404, 'an unknown track is not answered...');
    t.equal((await postJson(`${url}/report`, { device_id: 'dev-b', previous_hash: old, new_hash: binary.hash, success: false, rollback_reason: 'health check failed', timestamp: 1_800_000_000 })).status, 204);
    const coapReport = await client.request({ method: 'POST', path: '/report', contentFormat: 60, payload: encodeReport({ device_id: 'dev-e', previous_hash: old, new_hash: binary.hash, success: true, timestamp: 1_800_000_000 }) });
    t.equal(coapReport.code, '2.04');

    const all = await eventually('six devices listed', () => adminCall(url, 'GET', '/admin/devices'),
      (a) => a.status === 200 && a.json.devices.length === 6 && a.json.devices.some((d: any) => d.last_report?.success === false));
    t.same(all.json.devices.map((d: any) => d.device_id), ['dev-a', 'dev-b', 'dev-c', 'dev-coap', 'dev-d', 'dev-e'], 'ordered by device_id; ...nor recorded');
    t.equal(all.json.next, null);
    const b = all.json.devices[1];
    t.match(b, { artifact: 'app/linux/arm64', version_hash: old, version: '1.0.0', transport: 'http', hw_info: { arch: 'arm64', os: 'linux', free_ram: 6_000_000_000, free_disk: 1 } }, 'a heartbeat naming no track is recorded under the default track');
    t.match(b.last_report, { success: false, new_hash: binary.hash, rollback_reason: 'health check failed' });
    t.ok(b.first_seen > 1_700_000_000 && b.last_seen >= b.first_seen);
    t.equal(all.json.devices[3].transport, 'coap');

    const first = await adminCall(url, 'GET', '/admin/devices?limit=2');
    t.same(first.json.devices.map((d: any) => d.device_id), ['dev-a', 'dev-b']);
    const second = await adminCall(url, 'GET', `/admin/devices?limit=2&after=${first.json.next}`);
    t.same(second.json.devices.map((d: any) => d.device_id), ['dev-c', 'dev-coap']);
    const filtered = await adminCall(url, 'GET', `/admin/devices?artifact=app/linux/arm64&version_hash=${binary.hash}&seen_within=1h`);
    t.same(filtered.json.devices.map((d: any) => d.device_id), ['dev-e']);

    const e = await adminCall(url, 'GET', '/admin/devices/dev-e');
    t.equal(e.status, 200);
    t.match(e.json.reports, [{ previous_hash: old, new_hash: binary.hash, success: true, rollback_reason: '' }]);
    t.ok(e.json.reports[0].received_at >= e.json.first_seen - 1);
    t.match(await adminCall(url, 'GET', '/admin/devices/nobody'), { status: 404, json: { error: { code: 'DEVICE_NOT_FOUND' } } });
    t.match(await adminCall(url, 'GET', '/admin/devices/dev%2'), { status: 400, json: { error: { code: 'INVALID_FIELD' } } });

    const summary = await adminCall(url, 'GET', '/admin/fleet?artifact=app/linux/arm64');
    t.same(summary.json, {
      artifact: 'app/linux/arm64', devices: 6,
      versions: [{ version_hash: old, version: '1.0.0', devices: 5 }, { version_hash: binary.hash, version: '2.0.0', devices: 1 }],
      reports_24h: { success: 1, failure: 1 }, rollout: null,
    });
    t.same((await adminCall(url, 'GET', '/admin/fleet')).json, summary.json, 'no artifact: the default track');

    const bad: [string, string][] = [
      ['/admin/devices?color=red', 'UNKNOWN_QUERY_PARAMETER'],
      ['/admin/devices?limit=0', 'INVALID_LIMIT'],
      ['/admin/devices?limit=1001', 'INVALID_LIMIT'],
      ['/admin/devices?limit=ten', 'INVALID_LIMIT'],
      ['/admin/devices?after=not-a-cursor', 'INVALID_CURSOR'],
      ['/admin/devices?after=ZDo', 'INVALID_CURSOR'],
      ['/admin/devices?version_hash=ABC', 'INVALID_HASH'],
      ['/admin/devices?seen_within=soon', 'INVALID_FIELD'],
      ['/admin/devices?limit=1&limit=2', 'INVALID_FIELD'],
      ['/admin/devices?artifact=..', 'INVALID_ARTIFACT_KEY'],
      ['/admin/fleet?artifact=app&x=1', 'UNKNOWN_QUERY_PARAMETER'],
    ];
    for (const [path, code] of bad) t.match(await adminCall(url, 'GET', path), { status: 400, json: { error: { code } } }, path);
    t.equal((await adminCall(url, 'GET', '/admin/devices', undefined, null)).status, 401, 'the admin token is required');
    t.equal((await adminCall(url, 'POST', '/admin/devices', {})).status, 405);
    t.equal((await adminCall(url, 'GET', '/admin/devices?limit=1000')).status, 200, 'the limits themselves are fine');

    const metrics = await (await fetch(`${url}/metrics`)).text();
    t.equal(metricValue(metrics, 'updater_fleet_buffer_bytes', { kind: 'budget' }), 16 * 1024 * 1024);
    t.equal(metricValue(metrics, 'updater_fleet_dropped_updates_total', { reason: 'last_seen' }), 0);
    t.ok(metricValue(metrics, 'updater_fleet_flush_lag_seconds_count') >= 8, 'every record\'s flush lag is observed');
    await stop();

    // A restart keeps the inventory; the devices-per-version gauge is read at start.
    const again = await startTestServer(fixture, artifacts, overrides);
    t.teardown(() => again.stop());
    t.equal((await adminCall(again.url, 'GET', '/admin/devices')).json.devices.length, 6, 'the records survive a restart');
    const after = await (await fetch(`${again.url}/metrics`)).text();
    t.equal(metricValue(after, 'updater_fleet_devices', { artifact: 'app/linux/arm64', version_hash: old }), 5);
  });
}

export function fleetDisabledCase(): void {
  t.test('with fleet.enabled false the server answers devices and the fleet calls say so', async (t) => {
    const fixture = await makeFixture();
    t.teardown(() => fixture.cleanup());
    const binary = await fixture.writeBinary('app.bin', firmware(1024, 'off'));
    const server = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: binary.path }], { fleet: { enabled: false } });
    t.teardown(() => server.stop());
    t.equal((await postJson(`${server.url}/heartbeat`, { device_id: 'x', version_hash: randomHash(), version: '1', hw_info: { arch: 'arm64', os: 'linux', free_ram: 1, free_disk: 2 }, timestamp: 1_800_000_000 })).status, 200);
    t.match(await adminCall(server.url, 'GET', '/admin/devices'), { status: 404, json: { error: { code: 'FLEET_DISABLED' } } });
    t.match(await adminCall(server.url, 'GET', '/admin/fleet?artifact=app'), { status: 404, json: { error: { code: 'FLEET_DISABLED' } } });
  });
}
