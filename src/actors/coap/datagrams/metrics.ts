import { Counter, Gauge, type Registry } from 'prom-client';
import { createDeviceCounters } from '../../front-ends/device-metrics.js';
import { FastHistogram, routeClassRecorders } from '../../../shared/fast-histogram.js';
import { plainCounter } from '../../../shared/plain-counter.js';

export interface CoapMetrics {
  /** Returns the function that records the request's end with its response code. */
  startRequest(route: string): (code: string) => void;
  dropped(reason: string): void;
  /** A heartbeat answered 2.05, straight from its datagram or through node-coap (direct-heartbeat.ts). */
  heartbeatAnswered(path: HeartbeatPath): void;
  report(success: boolean): void;
  transferred(kind: string, bytes: number): void;
}

export type HeartbeatPath = 'direct' | 'node-coap';

export interface CoapGauges {
  inFlight(): number;
  dedupCacheBytes(): number;
}

export function createCoapMetrics(registry: Registry, gauges: CoapGauges): CoapMetrics {
  // prom-client's labelled observe() hashed its labels on every request: about a twentieth of
  // the CoAP thread in a heartbeat run. By route, then by the code's class digit, as on HTTP.
  const requests = new FastHistogram('updater_coap_request_seconds', 'CoAP requests by route and response class',
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5], registry);
  const recorderFor = routeClassRecorders(requests, (route, digit) => ({ route, code: `${digit}.xx` }));
  const dropped = new Counter({
    name: 'updater_coap_datagrams_dropped_total',
    help: 'Datagrams processed no further, by reason (a malformed confirmable one gets a bare Reset, the rest no answer)',
    labelNames: ['reason'],
    registers: [registry],
  });
  const device = createDeviceCounters(registry, 'coap');
  const heartbeats = plainCounter<HeartbeatPath>(registry, {
    name: 'updater_coap_heartbeats_answered_total',
    help: 'CoAP heartbeats answered 2.05, by path: direct (a plain confirmable heartbeat answered from its datagram) or node-coap (the rest)',
    label: 'path',
    values: ['direct', 'node-coap'],
  });
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
      const started = performance.now();
      return (code) => recorderFor(route, code[0] ?? '?')((performance.now() - started) / 1000);
    },
    dropped: (reason) => dropped.inc({ reason }),
    heartbeatAnswered: (path) => heartbeats[path]++,
    report: device.report,
    transferred: device.transferred,
  };
}
