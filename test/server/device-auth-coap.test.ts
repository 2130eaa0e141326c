import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { mintDeviceToken } from '../../src/shared/device-identity/token.js';
import { adminCall, eventually } from '../helpers/admin.js';
import { manifestOf } from '../helpers/coap.js';
import { startCoapTestServer } from '../helpers/coap.js';
import { authCoap, getCoap, heartbeatCoap, now, reportCoap, TestDevice } from '../helpers/device-auth.js';
import { firmware, makeFixture, randomHash } from '../helpers/fixture.js';

// Device identity over CoAP with devices.auth on: the same attacks as over HTTP, on a real UDP
// socket. The token rides as the Uri-Query option auth=<token>; refusals are 4.01 / 4.03 with
// the stable code as the diagnostic payload.

t.setTimeout(300_000);

t.test('device identity over CoAP (enrollment: manual)', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(20_000, 'coap-auth-v1'));
  const { server, client, stop } = await startCoapTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: v1.path }], {
    devices: { auth: 'on', enrollment: 'manual', max_pending: 2 },
    fleet: { flush_interval: '100ms' },
  });
  t.teardown(stop);
  const url = server.url;
  const settle = () => new Promise((r) => setTimeout(r, 400));
  const alice = new TestDevice('alice');
  const bob = new TestDevice('bob');
  const token = async (device: TestDevice) => {
    const answer = await authCoap(client, device.request());
    if (answer.code !== '2.05' || typeof answer.answer?.token !== 'string') throw new Error(`auth answered ${answer.code} ${answer.diagnostic} ${JSON.stringify(answer.answer)}`);
    return answer.answer.token as string;
  };

  await t.test('pending, accepted by the operator, then a token in CBOR', async (t) => {
    const first = await authCoap(client, alice.request());
    t.equal(first.code, '2.05');
    t.same(first.answer, { state: 'pending', retry_after: 60 });
    await adminCall(url, 'POST', '/admin/devices/alice/accept');
    const again = await authCoap(client, alice.request());
    t.equal(again.code, '2.05');
    t.ok(typeof again.answer!.token === 'string' && (again.answer!.token as string).length <= 64);
    t.equal(again.answer!.expires_in, 86_400);
  });

  await t.test('a heartbeat needs the token as Uri-Query auth=', async (t) => {
    const anonymous = await heartbeatCoap(client, undefined, 'mallory', v1.hash);
    t.equal(anonymous.code, '4.01');
    t.match(anonymous.payload.toString(), /^DEVICE_TOKEN_INVALID/);
    const answered = await heartbeatCoap(client, await token(alice), 'alice', v1.hash);
    t.equal(answered.code, '2.05');
    t.equal(manifestOf(answered).update_available, false);
    // What was recorded is waited for; what must not be gets the settle on top.
    await eventually('alice\'s heartbeat is recorded', () => adminCall(url, 'GET', '/admin/devices/alice'), (r) => r.json?.transport === 'coap', 10_000);
    await settle();
    t.equal((await adminCall(url, 'GET', '/admin/devices/mallory')).status, 404);
    t.equal((await adminCall(url, 'GET', '/admin/devices/alice')).json.transport, 'coap');
  });

  await t.test('replayed, tampered and skewed auth requests are refused', async (t) => {
    const request = alice.request();
    t.equal((await authCoap(client, request)).code, '2.05');
    const replay = await authCoap(client, request);
    t.equal(replay.code, '4.01');
    t.match(replay.diagnostic, /^DEVICE_AUTH_FAILED/);
    const tampered = { ...request, signature: request.signature.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')) };
    t.equal((await authCoap(client, tampered)).code, '4.01', 'tampered signature');
    t.equal((await authCoap(client, alice.request(now() - 400))).code, '4.01', 'clock 400 s behind');
    t.equal((await authCoap(client, alice.request(now() + 400))).code, '4.01', 'clock 400 s ahead');
    const impostor = await authCoap(client, new TestDevice('alice').request());
    t.equal(impostor.code, '4.03');
    t.match(impostor.diagnostic, /^DEVICE_KEY_MISMATCH/);
  });

  await t.test('device A\'s token cannot speak for device B', async (t) => {
    await authCoap(client, bob.request());
    await adminCall(url, 'POST', '/admin/devices/bob/accept');
    const bobToken = await token(bob);
    t.equal((await heartbeatCoap(client, bobToken, 'bob', v1.hash)).code, '2.05');
    const aliceToken = await token(alice);
    const forged = await heartbeatCoap(client, aliceToken, 'bob', randomHash());
    t.equal(forged.code, '4.03');
    t.match(forged.payload.toString(), /^DEVICE_MISMATCH/);
    const report = await reportCoap(client, aliceToken, 'bob', v1.hash, randomHash(), false);
    t.equal(report.code, '4.03');
    await eventually('bob\'s own heartbeat is recorded', () => adminCall(url, 'GET', '/admin/devices/bob'), (r) => r.json?.version_hash === v1.hash, 10_000);
    await settle();
    const bobNow = (await adminCall(url, 'GET', '/admin/devices/bob')).json;
    t.equal(bobNow.version_hash, v1.hash);
    t.same(bobNow.reports, []);
    t.equal((await reportCoap(client, bobToken, 'bob', v1.hash, v1.hash, true)).code, '2.04');
  });

  await t.test('forged and expired tokens are refused; downloads need a token', async (t) => {
    const db = new Database(join(fixture.dir, 'store', 'updater.db'), { readonly: true });
    const key = Buffer.from((db.prepare('select value from device_auth_keys').get() as { value: string }).value, 'base64');
    db.close();
    for (const [what, bad] of [
      ['other key', mintDeviceToken(new Uint8Array(32), 'alice', now(), 3600)],
      ['expired', mintDeviceToken(key, 'alice', now() - 7200, 3600)],
      ['random', 'd1.' + Buffer.alloc(40, 9).toString('base64url')],
    ] as const) {
      const answer = await heartbeatCoap(client, bad, 'alice', v1.hash);
      t.equal(answer.code, '4.01', what);
    }
    t.equal((await heartbeatCoap(client, mintDeviceToken(key, 'alice', now(), 3600), 'alice', v1.hash)).code, '2.05', 'a live token of the real key passes');
    t.equal((await getCoap(client, undefined, `/binary/${v1.hash}`)).code, '4.01');
    t.equal((await getCoap(client, undefined, `/delta/${randomHash()}/${v1.hash}`)).code, '4.01');
    const aliceToken = await token(alice);
    await eventually('the full file is served with a token', () => getCoap(client, aliceToken, `/binary/${v1.hash}`), (r) => r.code === '2.05');
  });

  await t.test('a rejected device is refused at once, over CoAP too', async (t) => {
    const bobToken = await token(bob);
    await adminCall(url, 'POST', '/admin/devices/bob/reject');
    await eventually('bob\'s token is refused', () => heartbeatCoap(client, bobToken, 'bob', v1.hash), (r) => r.code === '4.01', 5_000);
    const again = await authCoap(client, bob.request());
    t.equal(again.code, '4.03');
    t.match(again.diagnostic, /^DEVICE_NOT_ACCEPTED/);
  });

  await t.test('max_pending bounds new enrollments: 4.29', async (t) => {
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await authCoap(client, new TestDevice(`flood-${i}`).request())).code);
    t.same(codes, ['2.05', '2.05', '4.29']);
  });
});
