import t, { type Test } from 'tap';
import type { Engine } from '../../src/shared/database/schema.js';
import { adminCall } from '../helpers/admin.js';
import { ageRows } from '../helpers/age-rows.js';
import { startCoapTestServer } from '../helpers/coap.js';
import { authCoap, authHttp, TestDevice } from '../helpers/device-auth.js';
import { createTestDatabase } from '../helpers/databases.js';
import { firmware, makeFixture } from '../helpers/fixture.js';

// The enrollment attacks of issue 36 (items 4, 6 and the ids of 7), played by an anonymous
// client over HTTP and CoAP against a real server, on each engine (the enrollment state is the
// database's, shared by every replica). Time passes by ageing rows in the database, not by
// waiting. Each refusal comes with the request the rule lets through, so a refusal for another
// reason fails the test.

const PENDING_TTL_S = 24 * 3600;
const FULL = 4;

/** A server of its own (so that each rule's test fails for its own reason), and what the tests play with. */
async function enrollmentServer(t: Test, engine: Engine, maxPending: number) {
  const fixture = await makeFixture('updater-enroll-');
  const database = await createTestDatabase(engine, fixture.dir);
  t.teardown(async () => {
    await database.drop();
    await fixture.cleanup();
  });
  const v1 = await fixture.writeBinary('v1.bin', firmware(5_000, `enroll-${engine}`));
  const { server, client, stop } = await startCoapTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: v1.path }], {
    database: database.location,
    devices: { auth: 'on', enrollment: 'manual', max_pending: maxPending, pending_ttl: '24h' },
  });
  t.teardown(stop);
  const url = server.url;
  return {
    url,
    age: (ids: string[], seconds: number) => ageRows(engine, database.location, { table: 'device_identities', column: 'created_at' }, ids, seconds),
    pendingIds: async () => (await adminCall(url, 'GET', '/admin/devices?auth_state=pending&limit=1000')).json.devices.map((d: any) => d.device_id),
    viaHttp: async (device: TestDevice) => {
      const answer = await authHttp(url, device.request());
      return `${answer.status} ${answer.json?.error?.code ?? answer.json?.state ?? 'token'}`;
    },
    viaCoap: async (device: TestDevice) => {
      const answer = await authCoap(client, device.request());
      return `${answer.code} ${answer.code === '2.05' ? (answer.answer?.state ?? 'token') : answer.diagnostic.split(':')[0]}`;
    },
  };
}

export function enrollmentAttacksCase(engine: Engine): void {
  t.test(`${engine}: enrollment cannot be locked for good`, async (t) => {
    const { age, pendingIds, viaHttp, viaCoap } = await enrollmentServer(t, engine, FULL);

    await t.test('item 4: an anonymous burst keeps genuine devices out only until pending_ttl', async (t) => {
      const burst = ['flood-0', 'flood-1', 'flood-2', 'flood-3'];
      t.same([await viaHttp(new TestDevice(burst[0]!)), await viaHttp(new TestDevice(burst[1]!)), await viaCoap(new TestDevice(burst[2]!)), await viaCoap(new TestDevice(burst[3]!))],
        ['202 pending', '202 pending', '2.05 pending', '2.05 pending'], 'the burst fills max_pending');
      t.equal(await viaHttp(new TestDevice('gen-1')), '429 DEVICE_PENDING_FULL', 'a genuine device is locked out meanwhile (HTTP)');
      t.equal(await viaCoap(new TestDevice('gen-2')), '4.29 DEVICE_PENDING_FULL', 'and over CoAP');
      t.equal(await age(burst, PENDING_TTL_S - 60), 4);
      t.equal(await viaHttp(new TestDevice('gen-1')), '429 DEVICE_PENDING_FULL', 'a minute before pending_ttl the burst still holds');
      t.equal(await age(burst, 61), 4);
      t.equal(await viaHttp(new TestDevice('gen-1')), '202 pending', 'past pending_ttl the burst no longer counts (HTTP)');
      t.equal(await viaCoap(new TestDevice('gen-2')), '2.05 pending', 'and over CoAP');
      t.same(await pendingIds(), ['gen-1', 'gen-2'], 'expired entries are not listed as pending');
    });
  });

  t.test(`${engine}: enrollment cannot be squatted or fed hostile ids; any id can be rejected`, async (t) => {
    const { url, age, pendingIds, viaHttp, viaCoap } = await enrollmentServer(t, engine, 100);

    await t.test('item 4: an id squatted with an attacker\'s key is the genuine device\'s again once the squat expires', async (t) => {
      const real7 = new TestDevice('cam-7');
      const real8 = new TestDevice('cam-8');
      t.equal(await viaHttp(new TestDevice('cam-7')), '202 pending', 'the squatter claims cam-7 over HTTP');
      t.equal(await viaCoap(new TestDevice('cam-8')), '2.05 pending', 'and cam-8 over CoAP');
      t.equal(await viaHttp(real7), '403 DEVICE_KEY_MISMATCH', 'the real cam-7 is turned away');
      t.equal(await viaCoap(real8), '4.03 DEVICE_KEY_MISMATCH', 'the real cam-8 too');
      await age(['cam-7', 'cam-8'], PENDING_TTL_S + 1);
      t.equal(await viaHttp(real7), '202 pending', 'past pending_ttl the real cam-7 enrolls as new (HTTP)');
      t.equal(await viaCoap(real8), '2.05 pending', 'and cam-8 (CoAP)');
      const listed = (await adminCall(url, 'GET', '/admin/devices?auth_state=pending')).json.devices;
      t.same(listed.filter((d: any) => d.device_id.startsWith('cam-')).map((d: any) => d.public_key), [real7.request().publicKey, real8.request().publicKey], 'each waits with the genuine key');
    });

    await t.test('item 4: preauthorizing an id replaces a squatter\'s pending claim on it', async (t) => {
      const real = new TestDevice('cam-9');
      t.equal(await viaHttp(new TestDevice('cam-9')), '202 pending', 'the squatter claims cam-9');
      const added = await adminCall(url, 'POST', '/admin/devices/preauthorize', { devices: [{ device_id: 'cam-9', public_key: real.request().publicKey }] });
      t.same(added.json, { added: 1, device_ids: ['cam-9'] });
      t.equal(await viaCoap(real), '2.05 token', 'the real cam-9 gets a token at once');
      t.equal(await viaHttp(new TestDevice('cam-9')), '403 DEVICE_KEY_MISMATCH', 'the squatter is turned away');
    });

    await t.test('item 6: any id can be rejected before its first request, and a rejection outlives a delete', async (t) => {
      const rejected = await adminCall(url, 'POST', '/admin/devices/ghost-1/reject');
      t.equal(rejected.status, 200, 'an id never seen is rejected');
      t.equal(rejected.json.auth_state, 'rejected');
      t.equal(await viaHttp(new TestDevice('ghost-1')), '403 DEVICE_NOT_ACCEPTED', 'with any key (HTTP)');
      t.equal(await viaCoap(new TestDevice('ghost-1')), '4.03 DEVICE_NOT_ACCEPTED', 'and over CoAP');
      t.equal((await adminCall(url, 'DELETE', '/admin/devices/ghost-1')).status, 200);
      t.equal(await viaHttp(new TestDevice('ghost-1')), '403 DEVICE_NOT_ACCEPTED', 'a delete does not lift the rejection');
      t.equal((await adminCall(url, 'GET', '/admin/devices/ghost-1')).json.auth_state, 'rejected', 'it is listed as rejected');
      t.equal((await adminCall(url, 'POST', '/admin/devices/ghost-2/accept')).status, 404, 'an unknown id has nothing to accept');
      t.equal((await adminCall(url, 'POST', '/admin/devices/ghost-1/accept')).status, 200, 'an accept lifts it');
      t.equal((await adminCall(url, 'DELETE', '/admin/devices/ghost-1')).status, 200, 'and a delete then forgets the id');
      t.equal(await viaCoap(new TestDevice('ghost-1')), '2.05 pending', 'which enrolls anew');
    });

    await t.test('item 6: preauthorize works for any id: unknown, pending with another key, or rejected', async (t) => {
      const [fresh, vouched] = [new TestDevice('ghost-3'), new TestDevice('ghost-4')];
      t.equal((await adminCall(url, 'POST', '/admin/devices/ghost-4/reject')).status, 200, 'ghost-4 is rejected ahead of time');
      t.equal(await viaHttp(vouched), '403 DEVICE_NOT_ACCEPTED');
      const added = await adminCall(url, 'POST', '/admin/devices/preauthorize', {
        devices: [{ device_id: 'ghost-3', public_key: fresh.request().publicKey }, { device_id: 'ghost-4', public_key: vouched.request().publicKey }],
      });
      t.same(added.json, { added: 2, device_ids: ['ghost-3', 'ghost-4'] }, 'an unknown id and a rejected one are both taken');
      t.equal(await viaHttp(fresh), '200 token', 'ghost-3 gets its token (HTTP)');
      t.equal(await viaCoap(vouched), '2.05 token', 'the operator lifted the rejection with the key it vouches for (CoAP)');
      t.equal(await viaHttp(new TestDevice('ghost-4')), '403 DEVICE_KEY_MISMATCH', 'any other key is still refused');
      const again = await adminCall(url, 'POST', '/admin/devices/preauthorize', { devices: [{ device_id: 'ghost-3', public_key: new TestDevice('x').request().publicKey }] });
      t.same(again.json, { added: 0, device_ids: [] }, 'an accepted id keeps its key');
    });

    await t.test('item 7: enrollment refuses ".", ".." and ids with control characters, as the heartbeat does', async (t) => {
      const before = await pendingIds();
      for (const id of ['.', '..', 'a\u0000b', 'line\nbreak', 'tab\there', 'del\u007f', 'c1\u0085', 'sep\u2028x']) {
        // Escaped: a raw line separator in an assertion's name would break the TAP stream.
        const name = id.replace(/[^\x21-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
        const http = await authHttp(url, new TestDevice(id).request());
        t.match([http.status, http.json?.error?.code, http.json?.error?.message], [400, 'INVALID_FIELD', /^device_id must not/], `HTTP ${name}`);
        t.equal(await viaCoap(new TestDevice(id)), '4.00 INVALID_FIELD', `CoAP ${name}`);
        const pre = await adminCall(url, 'POST', '/admin/devices/preauthorize', { devices: [{ device_id: id, public_key: 'ab'.repeat(32) }] });
        t.equal(pre.json?.error?.code, 'INVALID_FIELD', `preauthorize ${name}`);
      }
      t.same(await pendingIds(), before, 'none of them was stored');
      t.equal(await viaHttp(new TestDevice('...')), '202 pending', 'dots within an id are fine');
      t.equal(await viaCoap(new TestDevice('a.b')), '2.05 pending');
    });
  });

  t.test(`${engine}: operators settle pending enrollments in bulk`, async (t) => {
    const { url, age, pendingIds, viaHttp, viaCoap } = await enrollmentServer(t, engine, FULL);

    await t.test('item 4: operators delete or reject pending enrollments in bulk, by filter', async (t) => {
      for (const id of ['gen-1', 'gen-2', 'cam-7', 'cam-8']) t.equal(await viaHttp(new TestDevice(id)), '202 pending', `${id} waits`);
      t.equal(await viaHttp(new TestDevice('gen-3')), '429 DEVICE_PENDING_FULL', 'full: gen-1, gen-2, cam-7, cam-8 wait');
      t.equal((await adminCall(url, 'POST', '/admin/devices/delete', {})).status, 400, 'no filter: 400');
      const sweepAll = await adminCall(url, 'POST', '/admin/devices/delete', { filter: { auth_state: 'accepted' } });
      t.equal(sweepAll.json?.error?.code, 'INVALID_FIELD', 'only pending enrollments are settled in bulk');
      const deleted = await adminCall(url, 'POST', '/admin/devices/delete', { filter: { auth_state: 'pending', id_prefix: 'cam-' } });
      t.equal(deleted.status, 200);
      t.same(deleted.json, { deleted: 2, device_ids: ['cam-7', 'cam-8'] });
      t.same(await pendingIds(), ['gen-1', 'gen-2'], 'the rest still wait');
      t.equal(await viaHttp(new TestDevice('gen-3')), '202 pending', 'there is room again');
      t.equal(await viaHttp(new TestDevice('cam-7')), '202 pending', 'a deleted enrollment\'s id enrolls anew, with any key');

      // gen-1 asked two hours ago: a reject of those that came within the last hour leaves it.
      await age(['gen-1'], 2 * 3600);
      const rejected = await adminCall(url, 'POST', '/admin/devices/reject', { filter: { auth_state: 'pending', first_seen_within: '1h', id_prefix: 'gen-' } });
      t.equal(rejected.status, 200);
      t.same(rejected.json, { rejected: 2, device_ids: ['gen-2', 'gen-3'] });
      t.equal(await viaHttp(new TestDevice('gen-2')), '403 DEVICE_NOT_ACCEPTED', 'a rejected id is refused (HTTP)');
      t.equal(await viaCoap(new TestDevice('gen-3')), '4.03 DEVICE_NOT_ACCEPTED', 'and over CoAP');
      t.same(await pendingIds(), ['cam-7', 'gen-1']);

      const audit = (await adminCall(url, 'GET', '/admin/audit?limit=20')).json.entries;
      const rows = audit.filter((e: any) => e.path === '/admin/devices/reject' || e.path === '/admin/devices/delete').map((e: any) => `${e.method} ${e.path} ${e.status} ${e.detail}`);
      t.match(rows, [/^POST \/admin\/devices\/reject 200 rejected 2 pending devices/, /^POST \/admin\/devices\/delete 200 deleted 2 pending devices/], 'each bulk call has its audit row, newest first');
    });
  });
}
