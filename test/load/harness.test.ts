import t from 'tap';
import { adminCall } from '../helpers/admin.js';
import { firmware, freePort, makeFixture } from '../helpers/fixture.js';
import { runUpdater, startTestServer } from '../helpers/server.js';

t.test('updater load drives a mixed HTTP and CoAP fleet and reports what happened', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(50_000, 'load-1'));
  const v2 = await fixture.writeBinary('v2.bin', firmware(50_000, 'load-2'));
  const coapPort = await freePort();
  const server = await startTestServer(fixture, [], { listen: { coap: `127.0.0.1:${coapPort}` }, manifest: { retry_after: '1s' } });
  t.teardown(() => server.stop());
  for (const [version, binary] of [['1', v1.path], ['2', v2.path]]) {
    t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version, binary })).status, 200);
  }
  const result = await runUpdater([
    'load', '--url', server.url, '--coap-url', `coap://127.0.0.1:${coapPort}`, '--coap-share', '0.5',
    '--devices', '200', '--rate', '200', '--duration', '4s', '--old-share', '0.5',
    '--admin-token-file', fixture.tokenPath, '--json',
  ], 60_000);
  t.equal(result.code, 0, result.stderr);
  const report = JSON.parse(result.stdout);
  t.ok(report.heartbeats > 400, `heartbeats were answered (${report.heartbeats})`);
  t.ok(report.transports.http > 0 && report.transports.coap > 0, 'over both transports');
  t.ok(report.outcomes.up_to_date > 0, 'devices on the target are told so');
  t.ok(report.updates_applied > 0, 'devices on the old version downloaded and verified an update');
  t.same(Object.keys(report.errors).filter((k) => k !== 'client_saturated'), [], 'no errors');
  t.ok(report.rss_mb.samples >= 2 && report.rss_mb.peak > 0, 'the server RSS was sampled');
  t.ok(report.latency_ms.p50 > 0 && report.latency_ms.p99 >= report.latency_ms.p50);
  for (const kind of ['http_heartbeat', 'coap_heartbeat', 'download']) {
    const l = report.latency_by_kind[kind];
    t.ok(l && l.count > 0 && l.p50 > 0 && l.p99 >= l.p50 && l.p999 >= l.p99, `latency of ${kind} reported on its own`);
  }
  t.ok(report.harness.sent > 0 && report.harness.event_loop_utilization > 0, 'the harness reports its own load');
  t.match(result.stderr, /heartbeats\/s=/, 'live progress on the terminal');
});

t.test('updater load refuses bad options', async (t) => {
  const bad = await runUpdater(['load', '--rate', '0']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--rate must be an integer from 1/);
  const coap = await runUpdater(['load', '--coap-share', '0.5']);
  t.equal(coap.code, 2);
  t.match(coap.stderr, /--coap-share needs --coap-url/);
  const fail = await runUpdater(['load', '--fail-rate', '1.5']);
  t.equal(fail.code, 2);
  t.match(fail.stderr, /--fail-rate must be a number from 0 to 1/);
});
