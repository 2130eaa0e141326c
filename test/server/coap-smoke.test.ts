import t from 'tap';
import { firmware, makeFixture } from '../helpers/fixture.js';
import { manifestOf, startCoapTestServer } from '../helpers/coap.js';
import { heartbeat } from '../helpers/http.js';

t.test('smoke', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(10_000, 's2'));
  const s = await startCoapTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }]);
  t.teardown(() => s.stop());
  const r = await s.client.heartbeat(v2.hash);
  console.log(r.code, r.raw.length, manifestOf(r));
  console.log((await heartbeat(s.server.url, v2.hash)).json);
});
