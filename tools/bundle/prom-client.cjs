'use strict';
// prom-client's index (15.1.3) for the actor bundles (tools/build.js): the same exports, each
// module loaded on first use. The index requires all of them at once: the Pushgateway among
// them, which loads Node's http, https, tls and zlib modules into every thread that counts
// anything, and the default metrics and the cluster aggregator. The actors use the Registry and
// the metric classes only; the supervisor (not bundled) loads the index itself.
// test/tools/prom-client-shim.test.ts checks that the exports match the index's.

const lazy = (name, load) => {
  let value;
  let loaded = false;
  Object.defineProperty(exports, name, {
    enumerable: true,
    get() {
      if (!loaded) {
        value = load();
        loaded = true;
      }
      return value;
    },
  });
};

lazy('register', () => require('prom-client/lib/registry').globalRegistry);
lazy('Registry', () => require('prom-client/lib/registry'));
Object.defineProperty(exports, 'contentType', {
  configurable: false,
  enumerable: true,
  get() {
    return exports.register.contentType;
  },
  set(value) {
    exports.register.setContentType(value);
  },
});
lazy('prometheusContentType', () => exports.Registry.PROMETHEUS_CONTENT_TYPE);
lazy('openMetricsContentType', () => exports.Registry.OPENMETRICS_CONTENT_TYPE);
lazy('validateMetricName', () => require('prom-client/lib/validation').validateMetricName);

lazy('Counter', () => require('prom-client/lib/counter'));
lazy('Gauge', () => require('prom-client/lib/gauge'));
lazy('Histogram', () => require('prom-client/lib/histogram'));
lazy('Summary', () => require('prom-client/lib/summary'));
lazy('Pushgateway', () => require('prom-client/lib/pushgateway'));

lazy('linearBuckets', () => require('prom-client/lib/bucketGenerators').linearBuckets);
lazy('exponentialBuckets', () => require('prom-client/lib/bucketGenerators').exponentialBuckets);

lazy('collectDefaultMetrics', () => require('prom-client/lib/defaultMetrics'));

lazy('aggregators', () => require('prom-client/lib/metricAggregators').aggregators);
lazy('AggregatorRegistry', () => require('prom-client/lib/cluster'));
