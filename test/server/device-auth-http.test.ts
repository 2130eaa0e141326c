import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { mintDeviceToken } from '../../src/shared/device-identity/token.js';
import { adminCall, eventually } from '../helpers/admin.js';
import { authHttp, authJson, getHttp, heartbeatHttp, now, reportHttp, TestDevice, tokenHttp } from '../helpers/device-auth.js';
import { ADMIN_TOKEN, firmware, makeFixture, randomHash } from '../helpers/fixture.js';
import { metricValue, postJson } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';

// Device identity over HTTP with devices.auth on, played by an attacker on a real socket: each
// refusal below is a check of the server (docs/protocol.md "Device authentication"), and each
// test also shows the request the check lets through, so a refusal for another reason fails it.

t.setTimeout(300_000);

t.test('device identity over HTTP (enrollment: manual)', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(20_000, 'auth-v1'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: v1.path }], {
    devices: { auth: 'on', enrollment: 'manual', max_pending: 4 },
    fleet: { flush_interval: '100ms' },
  });
  t.teardown(() => server.stop());
  const url = server.url;
  const inventory = async (id: string) => (await adminCall(url, 'GET', `/admin/devices/${encodeURIComponent(id)}`));
  // Inventory records are flushed every 100 ms; a check of what was not recorded waits a little.
  const settle = () => new Promise((r) => setTimeout(r, 400));

  const alice = new TestDevice('alice');
  const bob = new TestDevice('bob');

  await t.test('a new device waits as pending until an operator accepts it', async (t) => {
    const first = await authHttp(url, alice.request());
    t.equal(first.status, 202);
    t.same(first.json, { state: 'pending', retry_after: 60 });
    const list = await adminCall(url, 'GET', '/admin/devices?auth_state=pending');
    t.same(list.json.devices.map((d: any) => [d.device_id, d.auth_state, d.public_key]), [['alice', 'pending', alice.request().publicKey]]);
    const accepted = await adminCall(url, 'POST', '/admin/devices/alice/accept');
    t.equal(accepted.status, 200);
    t.equal(accepted.json.auth_state, 'accepted');
    const again = await authHttp(url, alice.request());
    t.equal(again.status, 200);
    t.ok(typeof again.json.token === 'string' && again.json.token.length <= 64, `a token of at most 64 characters (${again.json.token.length})`);
    t.equal(again.json.expires_in, 86_400);
    t.equal((await adminCall(url, 'POST', '/admin/devices/nobody/accept')).status, 404, 'accepting an unknown device is 404');
  });

  await t.test('a heartbeat without a token is refused and not recorded; with one it is answered and recorded', async (t) => {
    const anonymous = await heartbeatHttp(url, undefined, 'mallory', v1.hash);
    t.equal(anonymous.status, 401);
    t.equal(anonymous.json.error.code, 'DEVICE_TOKEN_INVALID');
    const token = await tokenHttp(url, alice);
    const answered = await heartbeatHttp(url, token, 'alice', v1.hash);
    t.equal(answered.status, 200);
    t.equal(answered.json.update_available, false);
    // What was recorded is waited for; what must not be gets the settle on top, time enough to
    // have been written had the server recorded it.
    const recorded = await eventually('alice\'s heartbeat is recorded', () => inventory('alice'), (r) => r.json?.version_hash === v1.hash, 10_000);
    await settle();
    t.equal((await inventory('mallory')).status, 404, 'the anonymous device never entered the inventory');
    t.equal(recorded.json.version_hash, v1.hash);
    t.equal(recorded.json.auth_state, 'accepted');
  });

  await t.test('a captured auth request cannot be replayed, nor an older one sent', async (t) => {
    const request = alice.request();
    t.equal((await authHttp(url, request)).status, 200, 'the request itself');
    const replay = await authHttp(url, request);
    t.equal(replay.status, 401);
    t.equal(replay.json.error.code, 'DEVICE_AUTH_FAILED');
    const older = await authHttp(url, alice.request(request.timestamp - 10));
    t.equal(older.status, 401, 'an older timestamp, freshly signed, is refused too');
  });

  await t.test('a tampered request is refused: signature, device id, timestamp', async (t) => {
    const request = alice.request();
    const flipped = request.signature.slice(0, 10) + (request.signature[10] === '0' ? '1' : '0') + request.signature.slice(11);
    for (const [what, body] of [
      ['signature', { ...authJson(request), signature: flipped }],
      ['device_id', { ...authJson(request), device_id: 'alice2' }],
      ['timestamp', { ...authJson(request), timestamp: request.timestamp + 1 }],
    ] as const) {
      const answer = await postJson(`${url}/auth`, body);
      t.equal(answer.status, 401, `tampered ${what}`);
      t.equal(answer.json.error.code, 'DEVICE_AUTH_FAILED');
    }
    t.equal((await authHttp(url, request)).status, 200, 'the untampered request still passes (nothing was recorded for the tampered ones)');
  });

  await t.test('a timestamp more than 300 s from the server clock is refused', async (t) => {
    for (const skew of [-400, 400]) {
      const answer = await authHttp(url, alice.request(now() + skew));
      t.equal(answer.status, 401, `skew ${skew} s`);
      t.equal(answer.json.error.code, 'DEVICE_AUTH_FAILED');
    }
    t.equal((await authHttp(url, alice.request(now() + 500))).status, 401);
    // Inside the window: 250 s ahead passes (and later requests must then be newer still).
    const ahead = new TestDevice('clocky');
    t.equal((await authHttp(url, ahead.request(now() + 250))).status, 202);
  });

  await t.test('a device id is bound to its first key', async (t) => {
    const impostor = new TestDevice('alice');
    const answer = await authHttp(url, impostor.request());
    t.equal(answer.status, 403);
    t.equal(answer.json.error.code, 'DEVICE_KEY_MISMATCH');
  });

  await t.test('a token of device A cannot heartbeat or report for device B', async (t) => {
    await authHttp(url, bob.request());
    await adminCall(url, 'POST', '/admin/devices/bob/accept');
    const bobToken = await tokenHttp(url, bob);
    t.equal((await heartbeatHttp(url, bobToken, 'bob', v1.hash)).status, 200);
    const aliceToken = await tokenHttp(url, alice);
    const forged = await heartbeatHttp(url, aliceToken, 'bob', randomHash());
    t.equal(forged.status, 403);
    t.equal(forged.json.error.code, 'DEVICE_MISMATCH');
    const report = await reportHttp(url, aliceToken, 'bob', v1.hash, randomHash(), false);
    t.equal(report.status, 403);
    t.equal(report.json.error.code, 'DEVICE_MISMATCH');
    await eventually('bob\'s own heartbeat is recorded', () => inventory('bob'), (r) => r.json?.version_hash === v1.hash, 10_000);
    await settle();
    const bobNow = await inventory('bob');
    t.equal(bobNow.json.version_hash, v1.hash, 'bob\'s record kept its hash');
    t.same(bobNow.json.reports, [], 'and no report was recorded for bob');
    t.equal((await reportHttp(url, bobToken, 'bob', v1.hash, v1.hash, true)).status, 204, 'bob reports with his own token');
  });

  await t.test('forged tokens are refused: random, another key, one byte changed', async (t) => {
    const real = await tokenHttp(url, alice);
    const otherKey = mintDeviceToken(new Uint8Array(32).fill(7), 'alice', now(), 3600);
    const bytes = Buffer.from(real.slice(3), 'base64url');
    bytes[5]! ^= 1; // the expiry, pushed further out
    const changed = 'd1.' + bytes.toString('base64url');
    for (const [what, token] of [['random', 'd1.' + Buffer.alloc(40, 1).toString('base64url')], ['other key', otherKey], ['changed', changed], ['garbage', 'x'], ['admin token', ADMIN_TOKEN]] as const) {
      const answer = await heartbeatHttp(url, token, 'alice', v1.hash);
      t.equal(answer.status, 401, what);
      t.equal(answer.json.error.code, 'DEVICE_TOKEN_INVALID', what);
    }
  });

  await t.test('an expired token is refused; one of the same key still valid passes', async (t) => {
    const db = new Database(join(fixture.dir, 'store', 'updater.db'), { readonly: true });
    const key = Buffer.from((db.prepare('select value from device_auth_keys').get() as { value: string }).value, 'base64');
    db.close();
    const expired = mintDeviceToken(key, 'alice', now() - 7200, 3600);
    const answer = await heartbeatHttp(url, expired, 'alice', v1.hash);
    t.equal(answer.status, 401);
    t.equal(answer.json.error.code, 'DEVICE_TOKEN_INVALID');
    t.match(answer.json.error.message, /expired/);
    t.equal((await heartbeatHttp(url, mintDeviceToken(key, 'alice', now() - 60, 3600), 'alice', v1.hash)).status, 200, 'the same key, a live token: answered');
  });

  await t.test('downloads need a token', async (t) => {
    const token = await tokenHttp(url, alice);
    t.equal((await getHttp(`${url}/binary/${v1.hash}`, undefined)).status, 401);
    t.equal((await getHttp(`${url}/delta/${randomHash()}/${v1.hash}`, undefined)).status, 401);
    await eventually('the full file is ready', () => getHttp(`${url}/binary/${v1.hash}`, token), (r) => r.status === 200);
    t.equal((await getHttp(`${url}/delta/${randomHash()}/${v1.hash}`, token)).status, 404, 'with a token, an unknown delta is a plain 404');
  });

  await t.test('GET /health tells liveness and store state, no hashes or versions', async (t) => {
    const health = await getHttp(`${url}/health`, undefined);
    t.equal(health.status, 200);
    const body = JSON.parse(health.body.toString());
    t.same(Object.keys(body).sort(), ['status', 'store']);
    t.notOk(health.body.toString().includes(v1.hash));
  });

  await t.test('a rejected device\'s tokens are refused at once, and it cannot authenticate again', async (t) => {
    const token = await tokenHttp(url, bob);
    t.equal((await heartbeatHttp(url, token, 'bob', v1.hash)).status, 200);
    t.equal((await adminCall(url, 'POST', '/admin/devices/bob/reject')).json.auth_state, 'rejected');
    const refused = await eventually('bob\'s token is refused', () => heartbeatHttp(url, token, 'bob', v1.hash), (r) => r.status === 401, 5_000);
    t.match(refused.json.error.message, /revoked/);
    t.equal((await getHttp(`${url}/binary/${v1.hash}`, token)).status, 401, 'downloads too');
    const again = await authHttp(url, bob.request());
    t.equal(again.status, 403);
    t.equal(again.json.error.code, 'DEVICE_NOT_ACCEPTED');
    // Accepted again, bob gets a new token; the old one stays refused.
    await adminCall(url, 'POST', '/admin/devices/bob/accept');
    const fresh = await tokenHttp(url, bob);
    t.equal((await heartbeatHttp(url, fresh, 'bob', v1.hash)).status, 200);
    t.equal((await heartbeatHttp(url, token, 'bob', v1.hash)).status, 401);
  });

  await t.test('pending enrollments are bounded by max_pending', async (t) => {
    // clocky is pending already; alice and bob are accepted.
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push((await authHttp(url, new TestDevice(`flood-${i}`).request())).status);
    t.same(answers, [202, 202, 202, 429, 429], 'three more wait (four in all), the next are refused');
    const refused = await authHttp(url, new TestDevice('flood-x').request());
    t.equal(refused.json.error.code, 'DEVICE_PENDING_FULL');
    const pending = await adminCall(url, 'GET', '/admin/devices?auth_state=pending&limit=1000');
    t.equal(pending.json.devices.length, 4);
    // A known pending device asking again is not a new enrollment.
    await adminCall(url, 'POST', '/admin/devices/flood-0/reject');
    t.equal((await authHttp(url, new TestDevice('flood-y').request())).status, 202, 'a reject makes room');
  });

  await t.test('preauthorize answers the ids it added; a preauthorized device gets a token at once; delete forgets it', async (t) => {
    const carol = new TestDevice('carol');
    const dave = new TestDevice('dave');
    const added = await adminCall(url, 'POST', '/admin/devices/preauthorize', {
      devices: [{ device_id: 'carol', public_key: carol.request().publicKey }, { device_id: 'dave', public_key: dave.request().publicKey }, { device_id: 'alice', public_key: dave.request().publicKey }],
    });
    t.equal(added.status, 200);
    t.same(added.json, { added: 2, device_ids: ['carol', 'dave'] }, 'alice, already bound, is left alone');
    t.same((await adminCall(url, 'GET', '/admin/devices?auth_state=preauthorized')).json.devices.map((d: any) => d.device_id), ['carol', 'dave']);
    const token = await tokenHttp(url, carol);
    t.equal((await heartbeatHttp(url, token, 'carol', v1.hash)).status, 200);
    t.equal((await authHttp(url, new TestDevice('dave').request())).json.error.code, 'DEVICE_KEY_MISMATCH', 'dave\'s id takes only dave\'s key');
    t.equal((await adminCall(url, 'POST', '/admin/devices/preauthorize', { devices: Array.from({ length: 10_001 }, (_, i) => ({ device_id: `d${i}`, public_key: 'ab'.repeat(32) })) })).status, 400, 'more than 10,000 at once is refused');
    t.equal((await adminCall(url, 'DELETE', '/admin/devices/carol')).status, 200);
    await eventually('carol\'s token is refused', () => heartbeatHttp(url, token, 'carol', v1.hash), (r) => r.status === 401, 5_000);
    await settle();
    t.equal((await inventory('carol')).status, 404, 'carol is forgotten');
    t.equal((await authHttp(url, new TestDevice('carol').request())).status, 429, 'a new key for carol is a new enrollment (and the pending list is full)');
    t.equal((await adminCall(url, 'DELETE', '/admin/devices/carol')).status, 404);
  });

  await t.test('the metrics count auth outcomes, refused tokens and pending devices', async (t) => {
    const text = (await getHttp(`${url}/metrics`, undefined)).body.toString();
    t.ok(metricValue(text, 'updater_device_auth_requests_total', { outcome: 'accepted' }) >= 5);
    t.ok(metricValue(text, 'updater_device_auth_requests_total', { outcome: 'failed' }) >= 5);
    t.ok(metricValue(text, 'updater_device_auth_requests_total', { outcome: 'pending_full' }) >= 2);
    t.ok(metricValue(text, 'updater_device_tokens_refused_total', { reason: 'mismatch' }) >= 2);
    t.ok(metricValue(text, 'updater_device_tokens_refused_total', { reason: 'revoked' }) >= 1);
    t.ok(metricValue(text, 'updater_device_tokens_refused_total', { reason: 'expired' }) >= 1);
    t.equal(metricValue(text, 'updater_devices_pending'), 4);
  });
});

t.test('enrollment: open accepts a new key at once; preauthorized refuses an unknown device', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(5_000, 'auth-open'));
  const open = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: v1.path }], { devices: { auth: 'on', enrollment: 'open' } });
  t.teardown(() => open.stop());
  const device = new TestDevice('newcomer');
  const token = await tokenHttp(open.url, device);
  t.equal((await heartbeatHttp(open.url, token, 'newcomer', v1.hash)).status, 200);
  t.equal((await adminCall(open.url, 'GET', '/admin/devices/newcomer')).json.auth_state, 'accepted');

  const fixture2 = await makeFixture();
  t.teardown(() => fixture2.cleanup());
  const closed = await startTestServer(fixture2, [{ name: 'app', version: '1.0.0', binary: v1.path }], { devices: { auth: 'on', enrollment: 'preauthorized' } });
  t.teardown(() => closed.stop());
  const stranger = await authHttp(closed.url, new TestDevice('stranger').request());
  t.equal(stranger.status, 403);
  t.equal(stranger.json.error.code, 'DEVICE_NOT_ACCEPTED');
  t.equal((await adminCall(closed.url, 'GET', '/admin/devices?auth_state=pending')).json.devices.length, 0, 'nothing was stored for it');
});

t.test('with devices.auth off (the default) /auth does not exist and devices need no token', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(5_000, 'auth-off'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: v1.path }]);
  t.teardown(() => server.stop());
  t.equal((await authHttp(server.url, new TestDevice('x').request())).status, 404);
  t.equal((await heartbeatHttp(server.url, undefined, 'x', v1.hash)).status, 200);
  const health = JSON.parse((await getHttp(`${server.url}/health`, undefined)).body.toString());
  t.equal(health.artifacts.app.hash, v1.hash, '/health still lists the tracks');
});
