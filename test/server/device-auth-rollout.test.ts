import { readFile } from 'node:fs/promises';
import t from 'tap';
import { adminCall, trackOf } from '../helpers/admin.js';
import { heartbeatHttp, reportHttp, TestDevice, tokenHttp } from '../helpers/device-auth.js';
import { firmware, makeFixture, nextVersion } from '../helpers/fixture.js';
import { cohortIds } from '../helpers/rollout.js';
import { startTestServer } from '../helpers/server.js';

// The campaign that opened the device identity work: with the open protocol, ten anonymous
// POST /report calls paused a rollout in under a second. With devices.auth on they are refused,
// the rollout keeps running, and reports from devices with a token still pause it.

t.setTimeout(300_000);

t.test('anonymous failure reports cannot pause a rollout; real devices\' reports can', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(8_000, 'forge-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'forge-v2'));
  const server = await startTestServer(fixture, [], {
    devices: { auth: 'on', enrollment: 'open' },
    fleet: { flush_interval: '100ms' },
    store: { state_file: `${fixture.dir}/state.json` },
  });
  t.teardown(() => server.stop());
  t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version: '1.0.0', binary: v1.path })).status, 200);
  const published = await adminCall(server.url, 'POST', '/admin/artifacts', {
    name: 'app', version: '2.0.0', binary: v2.path,
    rollout: { steps: [50, 100], step_interval: '1h', max_failure_rate: 0.1, min_reports: 3 },
  });
  t.equal(published.json.rollout.state, 'running');

  const forged = [];
  for (let i = 0; i < 10; i++) forged.push((await reportHttp(server.url, undefined, `ghost-${i}`, v1.hash, v2.hash, false)).status);
  t.same(forged, Array(10).fill(401), 'each anonymous report is refused');
  await new Promise((r) => setTimeout(r, 2_500)); // the manifester checks rollout health once a second
  const after = (await trackOf(server.url, 'app')).rollout;
  t.equal(after.state, 'running', 'the rollout still runs');
  t.same(after.reports, { success: 0, failure: 0 }, 'and counted none of them');

  // Three enrolled devices of the cohort that really failed do pause it.
  const ids = cohortIds(v2.hash, 50, true, 3, 'real');
  for (const id of ids) {
    const token = await tokenHttp(server.url, new TestDevice(id));
    t.equal((await heartbeatHttp(server.url, token, id, v1.hash)).status, 200);
    t.equal((await reportHttp(server.url, token, id, v1.hash, v2.hash, false)).status, 204);
  }
  const deadline = Date.now() + 15_000;
  let rollout = after;
  while (rollout.state === 'running' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    rollout = (await trackOf(server.url, 'app')).rollout;
  }
  t.match(rollout, { state: 'paused', paused_reason: 'failure_rate', reports: { failure: 3 } }, 'authenticated failures pause it');
});
