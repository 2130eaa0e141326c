import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { ENGINES } from '../helpers/databases.js';
import { authHttp, TestDevice } from '../helpers/device-auth.js';
import { firmware } from '../helpers/fixture.js';
import { startTestServer } from '../helpers/server.js';
import { startWebhookFixture } from '../helpers/webhook-receiver.js';

// `updater.device.pending` end to end: devices POST /auth over a real socket under manual
// enrollment, and a real receiver on 127.0.0.1 (which checks each signature) gets one signed
// CloudEvent per device that starts to wait, never one for a pending device asking again.
// Delivery is in order per webhook, so "no second event for alice" is shown without waiting on
// a clock: the event of a device that enrolls after alice's second request arrives right after
// alice's first.

t.setTimeout(300_000);

const SECRET = 'pending-webhook-secret-0123456789';

for (const engine of ENGINES) {
  t.test(`${engine}: a device that starts to wait is announced once`, async (t) => {
    const { fixture, database, receiver, secretFile } = await startWebhookFixture(t, engine, 'updater-pending-hook-', SECRET);
    const v1 = await fixture.writeBinary('v1.bin', firmware(8_000, 'pending-hook-v1'));
    const server = await startTestServer(fixture, [{ name: 'app', version: '1', binary: v1.path }], {
      database: database.location,
      devices: { auth: 'on', enrollment: 'manual' },
      webhooks: [{ url: receiver.url, secret_file: secretFile, events: ['updater.device.pending', 'updater.track.published'] }],
    });
    t.teardown(() => server.stop());
    const pendingEvents = () => receiver.accepted.filter((e) => e.type === 'updater.device.pending');
    const arrived = (n: number) => eventually(`${n} pending events delivered`, async () => pendingEvents().length, (len) => len >= n, 30_000);

    const alice = new TestDevice('alice');
    const first = await authHttp(server.url, alice.request());
    t.equal(first.status, 202, 'alice waits for an operator');
    await arrived(1);
    const [event] = pendingEvents();
    t.equal(event!.specversion, '1.0');
    t.equal(event!.source, '/updater');
    t.same(event!.data, { device_id: 'alice', public_key: alice.request().publicKey }, 'the event names the device and the key it waits with');
    t.ok(receiver.requests.every((r) => r.signatureValid), 'every delivery was signed with the secret');

    const second = await authHttp(server.url, alice.request());
    t.equal(second.status, 202, 'alice asks again and still waits');
    const bob = new TestDevice('bob');
    t.equal((await authHttp(server.url, bob.request())).status, 202, 'bob starts to wait after alice\'s second request');
    await arrived(2);
    t.same(pendingEvents().map((e) => e.data.device_id), ['alice', 'bob'], 'alice\'s second request announced nothing: bob\'s event came next');

    // A device the operator vouched for is never pending, so nothing is announced for it; the
    // accept of a pending one announces nothing either. Carol enrolls after both: hers is next.
    const dave = new TestDevice('dave');
    t.equal((await adminCall(server.url, 'POST', '/admin/devices/preauthorize', { devices: [{ device_id: 'dave', public_key: dave.request().publicKey }] })).status, 200);
    t.equal((await authHttp(server.url, dave.request())).status, 200, 'the preauthorized device gets its token at once');
    t.equal((await adminCall(server.url, 'POST', '/admin/devices/alice/accept')).status, 200);
    t.equal((await authHttp(server.url, alice.request())).status, 200);
    const carol = new TestDevice('carol');
    t.equal((await authHttp(server.url, carol.request())).status, 202);
    await arrived(3);
    t.same(pendingEvents().map((e) => e.data.device_id), ['alice', 'bob', 'carol']);
    t.equal(new Set(pendingEvents().map((e) => e.id)).size, 3, 'each event has its own id');
  });
}
