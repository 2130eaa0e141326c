import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { createDeviceCounters } from '../../front-ends/device-metrics.js';

export interface CoapMetrics {
  /** Returns the function that records the request's end with its response code. */
  startRequest(route: string): (code: string) => void;
  dropped(reason: string): void;
  report(success: boolean): void;
  transferred(kind: string, bytes: number): void;
}

export interface CoapGauges {
  inFlight(): number;
  dedupCacheBytes(): number;
}

export function createCoapMetrics(registry: Registry, gauges: CoapGauges): CoapMetrics {
  const requests = new Histogram({
    name: 'updater_coap_request_seconds',
    help: 'CoAP requests by route and response class',
    labelNames: ['route', 'code'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    registers: [registry],
  });
  const dropped = new Counter({
    name: 'updater_coap_datagrams_dropped_total',
    help: 'Datagrams processed no further, by reason (a malformed confirmable one gets a bare Reset, the rest no answer)',
    labelNames: ['reason'],
    registers: [registry],
  });
  const device = createDeviceCounters(registry, 'coap');
  new Gauge({
    name: 'updater_coap_in_flight',
    help: 'CoAP requests being answered (bounded by coap.max_in_flight)',
    registers: [registry],
    collect() {
      this.set(gauges.inFlight());
    },
  });
  new Gauge({
    name: 'updater_coap_dedup_cache_bytes',
    help: 'Bytes of responses held for duplicate detection (bounded by coap.dedup_cache_bytes)',
    registers: [registry],
    collect() {
      this.set(gauges.dedupCacheBytes());
    },
  });
  return {
    startRequest(route) {
      const started = process.hrtime.bigint();
      return (code) => {
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        requests.observe({ route, code: `${code[0] ?? '?'}.xx` }, seconds);
      };
    },
    dropped: (reason) => dropped.inc({ reason }),
    report: device.report,
    transferred: device.transferred,
  };
}
