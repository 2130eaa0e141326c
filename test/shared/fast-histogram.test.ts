import { AggregatorRegistry, Registry } from 'prom-client';
import t from 'tap';
import { FastHistogram } from '../../src/shared/fast-histogram.js';

t.test('a fast histogram renders like a prom-client histogram and merges across actors', async (t) => {
  const make = () => {
    const registry = new Registry();
    const h = new FastHistogram('req_seconds', 'requests', [0.01, 0.1], registry);
    return { registry, ok: h.recorder('a ok', { route: 'a', status: '2xx' }) };
  };
  const one = make();
  one.ok(0.005);
  one.ok(0.05);
  one.ok(3);
  const text = await one.registry.metrics();
  t.match(text, /# TYPE req_seconds histogram/);
  t.match(text, /req_seconds_bucket\{route="a",status="2xx",le="0.01"\} 1\n/);
  t.match(text, /req_seconds_bucket\{route="a",status="2xx",le="0.1"\} 2\n/, 'buckets are cumulative');
  t.match(text, /req_seconds_bucket\{route="a",status="2xx",le="\+Inf"\} 3\n/);
  t.match(text, /req_seconds_sum\{route="a",status="2xx"\} 3.055\n/);
  t.match(text, /req_seconds_count\{route="a",status="2xx"\} 3\n/);

  const two = make();
  two.ok(0.001);
  const merged = await AggregatorRegistry.aggregate([await one.registry.getMetricsAsJSON(), await two.registry.getMetricsAsJSON()] as never).metrics();
  t.match(merged, /req_seconds_count\{route="a",status="2xx"\} 4\n/, 'the supervisor adds up every actor');
});
