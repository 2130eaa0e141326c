import { readFile } from 'node:fs/promises';
import t from 'tap';
import { adminCall, eventually, trackOf } from '../helpers/admin.js';
import { CoapClient } from '../helpers/coap.js';
import { createTestDatabase, ENGINES } from '../helpers/databases.js';
import { firmware, freePort, makeFixture, nextVersion, randomHash } from '../helpers/fixture.js';
import { postJson } from '../helpers/http.js';
import { cohortIds, deviceHeartbeat } from '../helpers/rollout.js';
import { startTestServer } from '../helpers/server.js';

// The attack of issue 36, item 2: devices that were never offered a rollout's target send
// failure reports naming it, to pause the rollout (a denial of service on the operator's
// release). A report counts toward a rollout's health only from a device that was offered the
// target (in the cohort of a step reached) from the version it reports leaving; the others are
// stored and shown, never counted. Over HTTP and CoAP, on SQLite and PostgreSQL.

const STEP = 5;
const ROLLOUT = { steps: [STEP, 100], step_interval: '1h', max_failure_rate: 0.5, min_reports: 4 };

for (const engine of ENGINES) {
  t.test(`${engine}: only reports of devices offered the target, from the version they left, decide its rollout`, async (t) => {
    const fixture = await makeFixture();
    t.teardown(() => fixture.cleanup());
    const database = await createTestDatabase(engine, fixture.dir);
    t.teardown(() => database.drop());
    const v1 = await fixture.writeBinary('v1.bin', firmware(20_000, 'offers-v1'));
    const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'offers-v2'));
    const coapPort = await freePort();
    const server = await startTestServer(fixture, [], {
      database: database.location, fleet: { flush_interval: '50ms' }, listen: { coap: `127.0.0.1:${coapPort}` },
    });
    t.teardown(() => server.stop());
    const coap = new CoapClient(coapPort);
    t.teardown(() => coap.close());
    t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version: '1', binary: v1.path })).status, 200);
    t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version: '2', binary: v2.path, rollout: ROLLOUT })).status, 200);

    const report = (device: string, previous: string, via: 'http' | 'coap') => {
      const fields = { device_id: device, previous_hash: previous, new_hash: v2.hash, success: false, rollback_reason: 'boot health check failed', timestamp: Math.floor(Date.now() / 1000) };
      return via === 'http' ? postJson(`${server.url}/report`, fields).then((r) => r.status) : coap.report(fields).then((r) => r.code);
    };
    const accepted = (status: number | string) => status === 204 || status === '2.04';

    // The attackers, 24 failure reports, each one stored:
    // - 8 devices never seen in a heartbeat (freshly enrolled ones, under devices.auth: open);
    const strangers = cohortIds(v2.hash, STEP, false, 8, 'stranger');
    // - 8 devices seen on v1 but outside the cohort: never offered v2;
    const outside = cohortIds(v2.hash, STEP, false, 8, 'outside');
    for (const id of outside) t.match((await deviceHeartbeat(server.url, id, v1.hash, 'app')).json, { update_available: false }, `${id} is not offered v2`);
    // - 8 devices of the cohort, offered v2 from v1, that claim to leave a version they were never seen on.
    const liars = cohortIds(v2.hash, STEP, true, 8, 'liar');
    for (const id of liars) t.not((await deviceHeartbeat(server.url, id, v1.hash, 'app')).json.update_available, undefined);
    const attacks = [
      ...strangers.map((id, i) => report(id, v1.hash, i % 2 ? 'coap' : 'http')),
      ...outside.map((id, i) => report(id, v1.hash, i % 2 ? 'coap' : 'http')),
      ...liars.map((id, i) => report(id, randomHash(), i % 2 ? 'coap' : 'http')),
    ];
    t.ok((await Promise.all(attacks)).every(accepted), 'every attacker report is accepted (stored)');

    // The genuine failures: 4 cohort devices, offered v2 from v1, report failing it (over both transports).
    const genuine = cohortIds(v2.hash, STEP, true, 4, 'genuine');
    for (const id of genuine) {
      const answer = (await deviceHeartbeat(server.url, id, v1.hash, 'app')).json;
      t.ok(answer.update_available === true || answer.retry_after !== undefined, `${id} is offered v2`);
    }
    t.ok((await Promise.all(genuine.map((id, i) => report(id, v1.hash, i % 2 ? 'coap' : 'http')))).every(accepted), 'the genuine reports are accepted');

    const paused = await eventually('the rollout pauses on the genuine failures', async () => (await trackOf(server.url, 'app')).rollout, (r) => r.state === 'paused', 20_000);
    t.match(paused, { state: 'paused', paused_reason: 'failure_rate' });
    t.same(paused.reports, { success: 0, failure: 4 }, 'exactly the 4 genuine reports count, none of the 24 attackers\'');
    const reports = await adminCall(server.url, 'GET', '/admin/reports?success=false&limit=100');
    t.equal(reports.status, 200);
    t.equal(reports.json.reports.length, 28, 'all 28 reports are stored and shown');
  });
}
