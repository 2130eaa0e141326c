import t from 'tap';
import { validateConfig } from '../../../src/shared/config/load.js';
import { makeFixture } from '../../helpers/fixture.js';
import { configDocument } from '../../helpers/server.js';

t.test('the coap section: defaults, bounds and unknown keys', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const load = (overrides: Record<string, unknown>) => validateConfig(configDocument(fixture, 8080, [], overrides), `${fixture.dir}/updater.yaml`);

  const defaults = load({});
  t.same(defaults.coap, { dedupCacheBytes: 1024 * 1024, maxInFlight: 1024 }, 'a 1 MiB duplicate cache and 1024 requests in flight by default');
  t.equal(defaults.listen.coap, undefined, 'no CoAP listener unless listen.coap is set');

  const set = load({ listen: { coap: '127.0.0.1:5683' }, coap: { dedup_cache_bytes: 65_536, max_in_flight: 8 } });
  t.same(set.listen.coap, { host: '127.0.0.1', port: 5683 });
  t.same(set.coap, { dedupCacheBytes: 65_536, maxInFlight: 8 });

  t.throws(() => load({ coap: { dedup_cache_bytes: 100 } }), /coap\.dedup_cache_bytes must be an integer from 4096/);
  t.throws(() => load({ coap: { max_in_flight: 0 } }), /coap\.max_in_flight must be an integer/);
  t.throws(() => load({ coap: { cache_size: 1 } }), /coap\.cache_size/);
  t.throws(() => load({ listen: { coap: 'nowhere' } }), /listen\.coap must be host:port/);
});
