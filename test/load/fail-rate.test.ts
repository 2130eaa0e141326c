import t from 'tap';
import { adminCall } from '../helpers/admin.js';
import { firmware, freePort, makeFixture } from '../helpers/fixture.js';
import { getBytes, metricValue } from '../helpers/http.js';
import { runUpdater, startTestServer } from '../helpers/server.js';

// `updater load --fail-rate`: the share of simulated devices whose update fails its boot check
// reports it with a rollback reason, as an operator needs to watch a staged rollout pause itself.

t.test('updater load --fail-rate makes a share of devices fail their update and report it', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(20_000, 'fail-1'));
  const v2 = await fixture.writeBinary('v2.bin', firmware(20_000, 'fail-2'));
  const coapPort = await freePort();
  const server = await startTestServer(fixture, [], { listen: { coap: `127.0.0.1:${coapPort}` }, allow_full_download: true });
  t.teardown(() => server.stop());
  t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version: '1', binary: v1.path })).status, 200);
  t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version: '2', binary: v2.path })).status, 200);
  const result = await runUpdater([
    'load', '--url', server.url, '--coap-url', `coap://127.0.0.1:${coapPort}`, '--coap-share', '0.3',
    '--devices', '100', '--rate', '100', '--duration', '5s', '--old-share', '1', '--fail-rate', '0.3',
    '--admin-token-file', fixture.tokenPath, '--json',
  ], 60_000);
  t.equal(result.code, 0, result.stderr);
  const report = JSON.parse(result.stdout);
  t.ok(report.updates_applied > 0, `some devices updated (${report.updates_applied})`);
  t.ok(report.updates_failed > 0, `some failed (${report.updates_failed})`);
  const attempts = report.updates_failed + report.updates_applied;
  const share = report.updates_failed / attempts;
  // Judged only on a sample large enough to say something (a saturated machine may update few).
  if (attempts >= 40) t.ok(share > 0.1 && share < 0.5, `about 30 % of the updates failed (${(share * 100).toFixed(0)} % of ${attempts})`);
  t.equal(report.reports, report.updates_applied + report.updates_failed, 'every attempt was reported');
  t.ok(report.updates_applied + report.updates_failed <= 100, 'a device takes a target once, and does not retry one that failed on it');
  // A loaded machine may let a heartbeat pass its deadline; anything else is an error of the server.
  t.same(Object.keys(report.errors).filter((k) => k !== 'client_saturated' && !k.endsWith('_timeout')), [], 'no errors');
  const metrics = (await getBytes(`${server.url}/metrics`)).body.toString();
  t.equal(metricValue(metrics, 'updater_update_reports_total', { result: 'failure' }), report.updates_failed, 'the server received the failures');
  t.equal(metricValue(metrics, 'updater_update_reports_total', { result: 'success' }), report.updates_applied);
});
