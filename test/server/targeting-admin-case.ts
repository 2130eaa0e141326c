import t from 'tap';
import { encodeHeartbeat } from '../../src/shared/wire/cbor.js';
import type { Engine } from '../../src/shared/database/schema.js';
import { adminCall, eventually } from '../helpers/admin.js';
import { startCoapTestServer } from '../helpers/coap.js';
import { createTestDatabase } from '../helpers/databases.js';
import { firmware, makeFixture, randomHash } from '../helpers/fixture.js';
import { postJson } from '../helpers/http.js';

// Attributes, tags and groups end to end on each engine: heartbeats over HTTP and CoAP store
// their attributes, an operator tags devices one by one and by filter, groups count their
// members as they are now, bad input is 400 naming the field with nothing stored, and the
// roles and the audit log apply.

export function targetingCase(engine: Engine): void {
  t.test(`${engine}: attributes, tags and groups`, async (t) => {
    const fixture = await makeFixture();
    const database = await createTestDatabase(engine, fixture.dir);
    t.teardown(async () => {
      await database.drop();
      await fixture.cleanup();
    });
    const binary = await fixture.writeBinary('app.bin', firmware(4096, 'targeting'));
    const { server, client, stop } = await startCoapTestServer(fixture, [{ name: 'app', version: '2', binary: binary.path }],
      { database: database.location, fleet: { flush_interval: '100ms' } });
    t.teardown(stop);
    const url = server.url;
    const old = randomHash();
    const beat = (device_id: string, extra: Record<string, unknown> = {}) => ({
      device_id, version_hash: old, version: '1', hw_info: { arch: 'arm64', os: 'linux', free_ram: 1, free_disk: 1 }, timestamp: 1_800_000_000, ...extra,
    });
    const call = (method: string, path: string, body?: unknown, token?: string) => adminCall(url, method, path, body, token);
    const device = async (id: string) => (await call('GET', `/admin/devices/${id}`)).json;

    t.equal((await postJson(`${url}/heartbeat`, beat('d1', { attributes: { hw: 'B', site: 'berlin' } }))).status, 200);
    t.equal((await postJson(`${url}/heartbeat`, beat('d2', { attributes: { hw: 'A' } }))).status, 200);
    t.equal((await postJson(`${url}/heartbeat`, beat('d3'))).status, 200);
    const coap = await client.request({ method: 'POST', path: '/heartbeat', contentFormat: 60, payload: encodeHeartbeat(beat('d4', { attributes: JSON.parse('{"hw":"B","__proto__":"x"}') })) });
    t.equal(coap.code, '2.05');
    const listed = await eventually('attributes stored', () => call('GET', '/admin/devices'),
      (a) => a.json.devices?.length === 4 && a.json.devices.every((d: any) => d.attributes !== undefined) && Object.keys(a.json.devices[3].attributes).length === 2);
    t.same(listed.json.devices.map((d: any) => [d.device_id, d.attributes, d.tags]), [
      ['d1', { hw: 'B', site: 'berlin' }, []], ['d2', { hw: 'A' }, []], ['d3', {}, []], ['d4', JSON.parse('{"__proto__":"x","hw":"B"}'), []],
    ], 'over HTTP and CoAP; "__proto__" is an ordinary key; {} when none was sent');

    t.equal((await postJson(`${url}/heartbeat`, beat('d1'))).status, 200);
    t.equal((await postJson(`${url}/heartbeat`, beat('d2', { attributes: {} }))).status, 200);
    await eventually('d2 cleared', () => device('d2'), (d) => Object.keys(d.attributes).length === 0);
    t.same((await device('d1')).attributes, { hw: 'B', site: 'berlin' }, 'a heartbeat without attributes leaves the stored set as it is');

    // One device's tags.
    const put = await call('PUT', '/admin/devices/d1/tags', { tags: ['lab', 'canary', 'lab'] });
    t.equal(put.status, 200);
    t.same([put.json.device_id, put.json.tags, put.json.attributes], ['d1', ['canary', 'lab'], { hw: 'B', site: 'berlin' }], 'the device, tags sorted');
    t.match(await call('PUT', '/admin/devices/nobody/tags', { tags: ['x'] }), { status: 404, json: { error: { code: 'DEVICE_NOT_FOUND' } } });
    for (const [body, field] of [
      [{ tags: Array.from({ length: 17 }, (_, i) => `t${i}`) }, 'tags'], [{ tags: ['x'.repeat(65)] }, 'tags[0]'], [{ tags: 'canary' }, 'tags'], [{ tag: ['x'] }, 'tag'],
    ] as const) {
      const refused = await call('PUT', '/admin/devices/d1/tags', body);
      t.match(refused, { status: 400, json: { error: { code: 'INVALID_FIELD' } } }, JSON.stringify(body).slice(0, 50));
      t.ok(refused.json.error.message.startsWith(`${field} `), `names ${field}`);
    }
    t.same((await device('d1')).tags, ['canary', 'lab'], 'nothing stored by the refused calls');

    // Tags by filter.
    t.same((await call('POST', '/admin/tags', { filter: { attributes: { hw: ['B', 'C'] } }, add: ['rev-b'] })).json, { devices: 2 });
    t.same((await call('GET', '/admin/devices')).json.devices.map((d: any) => d.tags), [['canary', 'lab', 'rev-b'], [], [], ['rev-b']]);
    t.same((await call('POST', '/admin/tags', { filter: { tags: ['lab'] }, remove: ['rev-b', 'lab'] })).json, { devices: 1 });
    t.same((await device('d1')).tags, ['canary']);
    const many = Array.from({ length: 16 }, (_, i) => `m${i}`);
    const over = await call('POST', '/admin/tags', { filter: {}, add: many });
    t.match(over, { status: 400, json: { error: { code: 'INVALID_FIELD' } } }, 'd1 (canary) and d4 (rev-b) would have 1 + 16');
    t.ok(over.json.error.message.startsWith('add ') && over.json.error.message.includes('2 device'), over.json.error.message);
    t.same((await call('GET', '/admin/devices')).json.devices.map((d: any) => d.tags.length), [1, 0, 0, 1], 'nothing was changed');
    t.match(await call('POST', '/admin/tags', { filter: { colour: 'red' }, add: ['x'] }), { status: 400, json: { error: { code: 'INVALID_FIELD' } } });
    t.match(await call('POST', '/admin/tags', { filter: {} }), { status: 400 }, 'neither add nor remove');

    // Groups.
    const canary = await call('PUT', '/admin/groups/canary', { filter: { tags: ['canary'] } });
    t.same([canary.status, canary.json], [200, { name: 'canary', filter: { tags: ['canary'] }, devices: 1 }]);
    t.same((await call('PUT', '/admin/groups/rev-b', { filter: { attributes: { hw: 'B' }, seen_within: '1h' } })).json.devices, 2);
    t.same((await call('GET', '/admin/devices?group=canary')).json.devices.map((d: any) => d.device_id), ['d1']);
    t.equal((await call('PUT', '/admin/devices/d3/tags', { tags: ['canary'] })).status, 200);
    t.same((await call('GET', '/admin/groups')).json, { groups: [
      { name: 'canary', filter: { tags: ['canary'] }, devices: 2 }, { name: 'rev-b', filter: { attributes: { hw: 'B' }, seen_within: '1h' }, devices: 2 },
    ] }, 'a device tagged since is a member now');
    t.same((await call('GET', '/admin/devices?group=canary&limit=1')).json.devices.map((d: any) => d.device_id), ['d1'], 'paging as before');
    t.same((await call('GET', '/admin/devices?group=rev-b&artifact=app')).json.devices.map((d: any) => d.device_id), ['d1', 'd4'], 'with the other filters');
    t.match(await call('GET', '/admin/devices?group=nope'), { status: 404, json: { error: { code: 'GROUP_NOT_FOUND' } } });
    t.match(await call('GET', '/admin/groups/nope'), { status: 404, json: { error: { code: 'GROUP_NOT_FOUND' } } });
    for (const [path, body, field] of [
      ['/admin/groups/a%20b', { filter: {} }, 'name'], [`/admin/groups/${'g'.repeat(65)}`, { filter: {} }, 'name'],
      ['/admin/groups/g', { filter: { seen_within: 'soon' } }, 'filter.seen_within'], ['/admin/groups/g', {}, 'filter'],
      ['/admin/groups/g', { filter: { tags: ['x'.repeat(65)] } }, 'filter.tags[0]'],
    ] as const) {
      const refused = await call('PUT', path, body);
      t.equal(refused.status, 400, `${path} ${JSON.stringify(body)}`);
      t.ok(refused.json.error.message.startsWith(`${field} `), `names ${field}: ${refused.json.error.message}`);
    }
    t.equal((await call('GET', '/admin/groups')).json.groups.length, 2, 'nothing stored by the refused calls');

    // Roles and the audit log.
    const reader = (await call('POST', '/admin/tokens', { name: 'r', role: 'read' })).json.token;
    const operator = (await call('POST', '/admin/tokens', { name: 'o', role: 'operate' })).json.token;
    t.equal((await call('GET', '/admin/groups', undefined, reader)).status, 200);
    t.equal((await call('GET', '/admin/groups/canary', undefined, reader)).status, 200);
    for (const [method, path, body] of [['PUT', '/admin/groups/x', { filter: {} }], ['DELETE', '/admin/groups/canary'], ['PUT', '/admin/devices/d1/tags', { tags: [] }], ['POST', '/admin/tags', { filter: {}, add: ['x'] }]] as const) {
      t.equal((await call(method, path, body, reader)).status, 403, `read may not ${method} ${path}`);
    }
    t.equal((await call('PUT', '/admin/groups/night', { filter: {} }, operator)).status, 200, 'operate may');
    const audit = (await call('GET', '/admin/audit?limit=50')).json.entries.map((e: any) => `${e.method} ${e.path} ${e.status}`);
    for (const line of ['PUT /admin/groups/night 200', 'PUT /admin/devices/d1/tags 200', 'POST /admin/tags 200', 'PUT /admin/groups/x 403']) t.ok(audit.includes(line), `audited: ${line}`);

    t.same((await call('DELETE', '/admin/groups/night')).json, { name: 'night', filter: {}, devices: 4 });
    t.match(await call('DELETE', '/admin/groups/night'), { status: 404, json: { error: { code: 'GROUP_NOT_FOUND' } } });

    // A deleted device comes back bare.
    t.equal((await call('DELETE', '/admin/devices/d1')).status, 200);
    t.equal((await postJson(`${url}/heartbeat`, beat('d1'))).status, 200);
    const back = await eventually('d1 back', () => call('GET', '/admin/devices/d1'), (a) => a.status === 200);
    t.same([back.json.tags, back.json.attributes], [[], {}], 'no tags or attributes of its earlier life');
  });
}
