import t from 'tap';
import { adminCall } from '../../../helpers/admin.js';
import { firmware, makeFixture } from '../../../helpers/fixture.js';
import { startTestServer } from '../../../helpers/server.js';

// A browser's URLSearchParams writes a track key's slashes as %2F; the admin calls that take
// it in the query string must read it exactly as the plain form.

t.test('the fleet calls of the console read their query strictly and as browsers write it', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const app = await fixture.writeBinary('app.bin', firmware(10_000, 'encoded-query'));
  const server = await startTestServer(fixture, [{ name: 'app', os: 'linux', arch: 'arm64', version: '1.0.0', binary: app.path }]);
  t.teardown(() => server.stop());

  t.test('a percent-encoded track key in the query reads like the plain one', async (t) => {
    const plain = await adminCall(server.url, 'GET', '/admin/fleet?artifact=app/linux/arm64');
    t.equal(plain.status, 200, JSON.stringify(plain.json));
    const encoded = await adminCall(server.url, 'GET', `/admin/fleet?${new URLSearchParams({ artifact: 'app/linux/arm64' })}`);
    t.equal(encoded.status, 200, JSON.stringify(encoded.json));
    t.same(encoded.json, plain.json);
    const devices = await adminCall(server.url, 'GET', '/admin/devices?artifact=app%2Flinux%2Farm64&limit=5');
    t.equal(devices.status, 200, JSON.stringify(devices.json));
  });

  t.test('GET /admin/reports and not_seen_for check their query like the other fleet calls', async (t) => {
    const ok = await adminCall(server.url, 'GET', '/admin/reports?success=false&artifact=app%2Flinux%2Farm64&limit=10');
    t.equal(ok.status, 200, JSON.stringify(ok.json));
    t.same(ok.json, { reports: [] });
    for (const [query, code] of [['success=maybe', 'INVALID_FIELD'], ['limit=0', 'INVALID_LIMIT'], ['limit=1001', 'INVALID_LIMIT'], ['artifact=a/b', 'INVALID_ARTIFACT_KEY'], ['since=1h', 'UNKNOWN_QUERY_PARAMETER']] as const) {
      const bad = await adminCall(server.url, 'GET', `/admin/reports?${query}`);
      t.equal(bad.status, 400, query);
      t.equal(bad.json.error.code, code, query);
    }
    t.equal((await adminCall(server.url, 'GET', '/admin/devices?not_seen_for=1h')).status, 200);
    const badDuration = await adminCall(server.url, 'GET', '/admin/devices?not_seen_for=lately');
    t.equal(badDuration.status, 400);
    t.equal(badDuration.json.error.code, 'INVALID_FIELD');
    t.equal((await adminCall(server.url, 'POST', '/admin/reports', {})).status, 405);
    t.ok([401, 429].includes((await adminCall(server.url, 'GET', '/admin/reports', undefined, null)).status), 'only with the token');
  });
});
