import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { firmware, freePort, makeFixture } from '../helpers/fixture.js';
import { heartbeatUntilSigned } from '../helpers/http.js';
import { runUpdater, spawnUpdater, startTestServer } from '../helpers/server.js';
import { TIGHT_FORMATS } from '../../src/load/fleet.js';

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
  // The deltas from version 1 in both patch formats the simulated devices ask for, made before
  // the run: made on first demand, they left devices told to come back for most of its 4 s
  // beside busy processes, and none updated.
  for (const formats of [undefined, [...TIGHT_FORMATS]]) await heartbeatUntilSigned(server.url, v1.hash, undefined, 60_000, undefined, formats);
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
  t.equal(report.ended, 'duration');

  await t.test('--until-updated ends the run once every device has applied its update', async (t) => {
    const updated = await runUpdater(['load', '--url', server.url, '--devices', '60', '--rate', '60', '--duration', '60s', '--old-share', '1',
      '--admin-token-file', fixture.tokenPath, '--until-updated'], 90_000);
    t.equal(updated.code, 0, updated.stderr);
    const [, seconds] = /for ([\d.]+) s \(ended: every device updated\)/.exec(updated.stdout) ?? [];
    t.ok(seconds !== undefined && Number(seconds) < 60, `ended before --duration, and says why (${updated.stdout.split('\n')[0]})`);
    t.match(updated.stdout, /updates applied 60 {3}failed 0 {3}reports 60/, 'each of the 60 devices, all on the old version, updated and reported it');
  });

  await t.test('SIGINT ends a run early with the report of the run so far', async (t) => {
    const run = spawnUpdater(['load', '--url', server.url, '--devices', '20', '--rate', '20', '--duration', '60s', '--json'], 90_000);
    await eventually('the run is under way', async () => run.stderr(), (err) => /t=1s/.test(err), 30_000);
    run.child.kill('SIGINT');
    const stopped = await run.done;
    t.equal(stopped.code, 0, stopped.stderr);
    const report = JSON.parse(stopped.stdout);
    t.equal(report.ended, 'stopped');
    t.ok(report.heartbeats > 0 && report.seconds < 60, `a report of the ${report.seconds.toFixed(1)} s it ran (${report.heartbeats} heartbeats)`);
  });
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
  const until = await runUpdater(['load', '--until-updated', '--no-download']);
  t.equal(until.code, 2);
  t.match(until.stderr, /--until-updated needs downloads/);
});
