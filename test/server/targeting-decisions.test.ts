import { firmware, makeFixture } from '../helpers/fixture.js';
import { startCoapTestServer } from '../helpers/coap.js';
import { decisionsCase } from './targeting-decisions-case.js';

// The targeting decisions (targeting-decisions-case.ts) on one server with its SQLite
// database: the operator and the device talk to the same server, so every change decides the
// device's next heartbeat.

decisionsCase('sqlite', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const other = await fixture.writeBinary('other.bin', firmware(10_000, 'tg-other'));
  const s = await startCoapTestServer(fixture, [{ name: 'other', version: '1', binary: other.path }], { store: { full_compression_level: 1 } });
  t.teardown(() => s.stop());
  const device = { url: s.server.url, coap: s.client };
  return { fixture, sides: () => ({ operator: s.server.url, device }), propagationMs: 0, startDelaySeconds: 3 };
});
