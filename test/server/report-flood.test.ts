import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { startCoapTestServer } from '../helpers/coap.js';
import { ENGINES } from '../helpers/databases.js';
import { firmware } from '../helpers/fixture.js';
import { metricValue, postJson } from '../helpers/http.js';
import { startWebhookFixture } from '../helpers/webhook-receiver.js';

// Issue 36, item 5, played as the attacker: one device floods /report over HTTP and CoAP at
// once. Only fleet.report_burst of its reports may be stored and announced to webhooks; the rest
// are refused (429 with Retry-After, 4.29 with Max-Age) and counted. And an operator's publish,
// made while a backlog of device events waits for a slow receiver, is delivered next, not after
// the backlog. Counts and order only: no wall-clock assertion.

t.setTimeout(300_000);

const SECRET = 'flood-webhook-secret-0123456789abc';
const BURST = 3;
const FLOOD = 40;
const OLD = 'a'.repeat(64);
const NEW = 'b'.repeat(64);
const report = (deviceId: string) => ({ device_id: deviceId, previous_hash: NEW, new_hash: OLD, success: false, rollback_reason: 'boot check failed', timestamp: 1_800_000_000 });

for (const engine of ENGINES) {
  t.test(`${engine}: a device flooding /report over HTTP and CoAP gets ${BURST} reports stored and announced`, async (t) => {
    const { fixture, database, receiver, secretFile } = await startWebhookFixture(t, engine, 'updater-flood-', SECRET);
    const v1 = await fixture.writeBinary('v1.bin', firmware(8_000, 'flood-v1'));
    const { server, client, stop } = await startCoapTestServer(fixture, [{ name: 'base', version: '1', binary: v1.path }], {
      database: database.location,
      log_level: 'error', // each failed report is a WARN line
      // One report a minute refills the bucket: the flood below takes far less than a minute.
      fleet: { flush_interval: '100ms', report_burst: BURST, reports_per_minute: 1 },
      webhooks: [{ url: receiver.url, secret_file: secretFile, events: ['updater.device.update_failed'] }],
    });
    t.teardown(stop);

    const [overHttp, overCoap] = await Promise.all([
      Promise.all(Array.from({ length: FLOOD }, () => postJson(`${server.url}/report`, report('dev-flood')))),
      (async () => {
        const answers = [];
        for (let i = 0; i < FLOOD; i++) answers.push(await client.report(report('dev-flood')));
        return answers;
      })(),
    ]);
    t.equal(overHttp.filter((a) => a.status === 204).length, BURST, `HTTP: ${BURST} reports taken`);
    const limited = overHttp.filter((a) => a.status === 429);
    t.equal(limited.length, FLOOD - BURST, 'HTTP: the rest refused with 429');
    t.ok(limited.every((a) => a.json.error.code === 'REPORT_RATE_LIMITED'), 'with REPORT_RATE_LIMITED');
    t.ok(limited.every((a) => Number(a.headers.get('retry-after')) >= 1), 'and a Retry-After');
    t.equal(overCoap.filter((a) => a.code === '2.04').length, BURST, `CoAP: ${BURST} reports taken by its front-end`);
    const limitedCoap = overCoap.filter((a) => a.code === '4.29');
    t.equal(limitedCoap.length, FLOOD - BURST, 'CoAP: the rest refused with 4.29');
    t.ok(limitedCoap.every((a) => a.payload.toString().startsWith('REPORT_RATE_LIMITED') && (a.option('Max-Age')?.length ?? 0) > 0), 'with the code and a Max-Age');

    // The fleet actor holds the device to one bucket for both transports: of the 2 × BURST the
    // front-ends took, BURST are stored. Once it has counted the other BURST, all have arrived.
    const metrics = async () => (await fetch(`${server.url}/metrics`)).text();
    await eventually('the fleet actor saw every report', async () => metricValue(await metrics(), 'updater_reports_rate_limited_total', { by: 'fleet' }), (n) => n >= BURST, 30_000);
    const text = await metrics();
    t.equal(metricValue(text, 'updater_reports_rate_limited_total', { by: 'http' }), FLOOD - BURST, 'refused HTTP reports counted');
    t.equal(metricValue(text, 'updater_reports_rate_limited_total', { by: 'coap' }), FLOOD - BURST, 'refused CoAP reports counted');
    t.equal(metricValue(text, 'updater_reports_rate_limited_total', { by: 'fleet' }), BURST, 'reports dropped at ingest counted');
    t.equal(metricValue(text, 'updater_update_reports_total', { result: 'failure' }), 2 * BURST, 'only taken reports count as received');

    const stored = async () => ((await adminCall(server.url, 'GET', '/admin/reports?limit=1000')).json.reports as { device_id: string }[]).filter((r) => r.device_id === 'dev-flood').length;
    await eventually('reports stored', stored, (n) => n >= BURST, 30_000);
    await eventually('outbox drained', async () => (await adminCall(server.url, 'GET', '/admin/webhooks')).json.webhooks[0], (w) => w.pending === 0 && w.delivered >= BURST, 30_000);
    t.equal(await stored(), BURST, `${BURST} reports stored`);
    t.equal(receiver.accepted.filter((e) => e.type === 'updater.device.update_failed').length, BURST, `${BURST} webhook deliveries`);
    t.equal((await adminCall(server.url, 'GET', '/admin/webhooks')).json.webhooks[0].delivered, BURST, 'and no more waiting in the outbox');

    // Another device is not held by the flooder's bucket.
    t.equal((await postJson(`${server.url}/report`, report('dev-quiet'))).status, 204, 'another device is not limited');
  });

  t.test(`${engine}: an operator's publish overtakes a backlog of device events`, async (t) => {
    const { fixture, database, receiver, secretFile } = await startWebhookFixture(t, engine, 'updater-flood-lane-', SECRET);
    const v1 = await fixture.writeBinary('v1.bin', firmware(8_000, 'lane-v1'));
    const tool = await fixture.writeBinary('tool.bin', firmware(8_000, 'lane-tool'));
    const { server, stop } = await startCoapTestServer(fixture, [{ name: 'base', version: '1', binary: v1.path }], {
      database: database.location,
      log_level: 'error', // each failed report is a WARN line
      fleet: { flush_interval: '100ms' },
      webhooks: [{ url: receiver.url, secret_file: secretFile, events: ['updater.device.update_failed', 'updater.track.published'] }],
    });
    t.teardown(stop);
    const webhook = async () => (await adminCall(server.url, 'GET', '/admin/webhooks')).json.webhooks[0];

    // A slow receiver: the first device event stays on the wire while the rest pile up.
    const DEVICES = 30;
    receiver.hold(true);
    const taken = [];
    for (let i = 0; i < DEVICES; i++) taken.push((await postJson(`${server.url}/report`, report(`dev-${i}`))).status);
    t.same(new Set(taken), new Set([204]), `${DEVICES} devices reported once each`);
    await eventually('the device backlog is in the outbox', webhook, (w) => w.pending === DEVICES, 30_000);
    await eventually('one device event is on the wire', async () => receiver.held(), (n) => n === 1, 30_000);

    const published = await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'tool', version: '1', binary: tool.path });
    t.equal(published.status, 200);
    await eventually('the publish event is in the outbox', webhook, (w) => w.pending === DEVICES + 1, 30_000);
    receiver.hold(false);

    await eventually('everything delivered', async () => receiver.accepted.length, (n) => n >= DEVICES + 1, 60_000);
    const types = receiver.accepted.map((e) => e.type);
    const at = types.indexOf('updater.track.published');
    t.ok(at >= 0 && at <= 1, `the publish came right after the device event on the wire (position ${at} of ${types.length})`);
    t.equal(types.filter((type) => type === 'updater.device.update_failed').length, DEVICES, 'every device event still delivered');
    t.equal(new Set(receiver.accepted.map((e) => e.data.device_id).filter(Boolean)).size, DEVICES, 'each device once');
  });
}
