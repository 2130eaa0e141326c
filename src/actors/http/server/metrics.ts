import type { Registry } from 'prom-client';
import { createDeviceCounters } from '../../front-ends/device-metrics.js';
import { FastHistogram, routeClassRecorders } from '../../../shared/fast-histogram.js';

/** A status's class by its first digit: one-character strings, which V8 does not allocate anew. */
const DIGITS = '0123456789';

export interface HttpMetrics {
  /** Returns the function that records the request's end with its status. */
  startRequest(route: string): (status: number) => void;
  /** The same without a function per request: records a request of `route` that began at `started` (performance.now()). */
  requestRecorder(route: string): (status: number, started: number) => void;
  report(success: boolean): void;
  transferred(kind: string, bytes: number): void;
}

export function createHttpMetrics(registry: Registry): HttpMetrics {
  const requests = new FastHistogram('updater_http_request_seconds', 'HTTP requests by route and status class',
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5], registry);
  const recorderFor = routeClassRecorders(requests, (route, digit) => ({ route, status: `${digit}xx` }));
  const device = createDeviceCounters(registry, 'http');
  const record = (route: string, status: number, started: number) =>
    recorderFor(route, DIGITS[Math.floor(status / 100)] ?? '?')((performance.now() - started) / 1000);
  return {
    startRequest(route) {
      const started = performance.now();
      return (status) => record(route, status, started);
    },
    requestRecorder: (route) => (status, started) => record(route, status, started),
    report: device.report,
    transferred: device.transferred,
  };
}
