import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { startCoapTestServer } from '../helpers/coap.js';
import { heartbeatCoap, heartbeatHttp } from '../helpers/device-auth.js';
import { firmware, makeFixture } from '../helpers/fixture.js';
import { runUpdater, spawnUpdater } from '../helpers/server.js';

// `updater load --device-auth` against a real server with devices.auth on, over HTTP and CoAP:
// every simulated device enrolls and sends its token, the inventory holds those devices and no
// one else, and a revocation in the middle of the run (an operator deletes devices) is cured by
// authenticating again rather than counted as errors.

async function listDevices(url: string): Promise<any[]> {
  const { status, json } = await adminCall(url, 'GET', '/admin/devices?limit=1000');
  if (status !== 200) throw new Error(`GET /admin/devices answered ${status}`);
  return json.devices;
}

async function metric(url: string, line: RegExp): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(line.exec(text)?.[1] ?? 0);
}

t.test('updater load --device-auth enrolls the fleet, sends tokens on both transports and recovers from a revocation', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(40_000, 'auth-load-1'));
  const v2 = await fixture.writeBinary('v2.bin', firmware(40_000, 'auth-load-2'));
  const { server, coapPort, client, stop } = await startCoapTestServer(fixture, [], { devices: { auth: 'on', enrollment: 'open' }, manifest: { retry_after: '1s' } });
  t.teardown(stop);
  for (const [version, binary] of [['1', v1.path], ['2', v2.path]]) {
    t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version, binary })).status, 200);
  }
  const DEVICES = 100;
  // 40 heartbeats a second: each device comes back every 2.5 s. The run ends (SIGINT, which
  // reports the run so far) once every revoked device is back; the 60 s are only its bound.
  const run = spawnUpdater([
    'load', '--url', server.url, '--coap-url', `coap://127.0.0.1:${coapPort}`, '--coap-share', '0.5',
    '--devices', String(DEVICES), '--rate', '40', '--duration', '60s', '--old-share', '0.5',
    '--admin-token-file', fixture.tokenPath, '--device-auth', '--json',
  ], 90_000);
  t.teardown(() => run.child.kill('SIGKILL'));

  // Once every device has heartbeated, the operator deletes five of each transport: their
  // tokens are revoked on every front-end, and open enrollment lets them enroll again.
  const seen = await eventually('every simulated device heartbeated', () => listDevices(server.url), (ds) => ds.filter((d) => d.transport !== '').length === DEVICES, 60_000);
  const victims = [...seen.filter((d) => d.transport === 'http').slice(0, 5), ...seen.filter((d) => d.transport === 'coap').slice(0, 5)];
  t.equal(victims.length, 10, 'devices of both transports to revoke');
  for (const d of victims) t.equal((await adminCall(server.url, 'DELETE', `/admin/devices/${encodeURIComponent(d.device_id)}`)).status, 200, `deleted ${d.device_id}`);

  // A stranger without a token, on both transports, while the fleet runs.
  const stranger = 'stranger-without-token';
  t.equal((await heartbeatHttp(server.url, undefined, stranger, v2.hash)).status, 401, 'an unauthenticated HTTP heartbeat is refused');
  t.equal((await heartbeatCoap(client, undefined, stranger, v2.hash)).code, '4.01', 'an unauthenticated CoAP heartbeat is refused');

  // Each victim's auth state and transport in the inventory ('gone' until it is back).
  const victimStates = async () => {
    const listed = await listDevices(server.url);
    return victims.map((v) => listed.find((d) => d.device_id === v.device_id)).map((d) => (d ? `${d.auth_state}:${d.transport}` : 'gone'));
  };
  await eventually('every revoked device enrolled again and heartbeated', victimStates, (states) => states.every((s, i) => s === `accepted:${victims[i]!.transport}`), 60_000);
  run.child.kill('SIGINT');
  const result = await run.done;
  t.equal(result.code, 0, result.stderr);
  const report = JSON.parse(result.stdout);
  t.equal(report.ended, 'stopped', `the run went on until every revoked device was back (${report.seconds.toFixed(1)} s)`);
  t.equal(report.auth.enrolled, DEVICES, 'every device enrolled before the run');
  t.ok(report.transports.http > 0 && report.transports.coap > 0, `heartbeats answered 200 / 2.05 over both transports (${JSON.stringify(report.transports)})`);
  t.ok(report.updates_applied > 0, 'devices downloaded and reported updates with their tokens');
  t.ok(report.auth.reauthenticated.http > 0 && report.auth.reauthenticated.coap > 0, `revoked tokens were cured by a new auth on both transports (${JSON.stringify(report.auth.reauthenticated)})`);
  t.same(Object.keys(report.errors).filter((k) => k !== 'client_saturated'), [], 'no errors: a 401 cured by re-authentication is not one');
  t.ok(await metric(server.url, /^updater_device_tokens_refused_total\{reason="revoked"\} (\d+)/m) > 0, 'the server did refuse revoked tokens');

  const inventory = await listDevices(server.url);
  t.equal(inventory.length, DEVICES, 'the inventory holds the fleet and no one else');
  t.ok(inventory.every((d) => d.device_id.startsWith('load-') && d.auth_state === 'accepted'), 'each an enrolled simulated device');
  t.notOk(inventory.some((d) => d.device_id === stranger), 'the stranger was not recorded');
});

t.test('updater load --device-auth --preauthorize enrolls a preauthorized fleet; without it every device is refused and counted', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(20_000, 'auth-pre-1'));
  const { server, coapPort, stop } = await startCoapTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: v1.path }], { devices: { auth: 'on', enrollment: 'preauthorized' } });
  t.teardown(stop);
  const args = ['load', '--url', server.url, '--coap-url', `coap://127.0.0.1:${coapPort}`, '--coap-share', '0.5', '--devices', '40', '--rate', '40', '--duration', '3s', '--admin-token-file', fixture.tokenPath, '--device-auth', '--json'];

  const refused = await runUpdater(args, 60_000);
  t.equal(refused.code, 1, 'no heartbeat answered: the run fails');
  const refusedReport = JSON.parse(refused.stdout);
  t.equal(refusedReport.auth.enrolled, 0);
  t.ok(refusedReport.errors.http_auth_403 > 0 && refusedReport.errors.coap_auth_403 > 0, `unknown keys refused 403 / 4.03 and counted by kind (${JSON.stringify(refusedReport.errors)})`);
  t.same(await listDevices(server.url), [], 'nothing is stored for a refused device');

  const admitted = await runUpdater([...args, '--preauthorize'], 60_000);
  t.equal(admitted.code, 0, admitted.stderr);
  const report = JSON.parse(admitted.stdout);
  t.equal(report.auth.enrolled, 40, 'every preauthorized device got its token');
  t.ok(report.transports.http > 0 && report.transports.coap > 0, 'heartbeats answered over both transports');
  t.same(Object.keys(report.errors).filter((k) => k !== 'client_saturated'), [], 'no errors');
  const inventory = await listDevices(server.url);
  t.equal(inventory.length, 40, 'the inventory holds the preauthorized fleet');
  t.ok(inventory.every((d) => d.auth_state === 'accepted'), 'each accepted at its first auth');
});

t.test('updater load refuses --device-auth without an admin token', async (t) => {
  const bad = await runUpdater(['load', '--device-auth']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--device-auth needs --admin-token-file/);
  const pre = await runUpdater(['load', '--preauthorize', '--admin-token-file', '/dev/null']);
  t.equal(pre.code, 2);
  t.match(pre.stderr, /--preauthorize needs --device-auth/);
});
