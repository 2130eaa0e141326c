import type { Registry } from 'prom-client';
import { createDeviceCounters } from '../../front-ends/device-metrics.js';
import { FastHistogram } from '../../../shared/fast-histogram.js';

export interface HttpMetrics {
  /** Returns the function that records the request's end with its status. */
  startRequest(route: string): (status: number) => void;
  report(success: boolean): void;
  transferred(kind: string, bytes: number): void;
}

export function createHttpMetrics(registry: Registry): HttpMetrics {
  const requests = new FastHistogram('updater_http_request_seconds', 'HTTP requests by route and status class',
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5], registry);
  // By route, then by the status's first digit: no key text is built on a request's path.
  const recorders = new Map<string, ((seconds: number) => void)[]>();
  const recorderFor = (route: string, status: number) => {
    let byClass = recorders.get(route);
    if (!byClass) recorders.set(route, (byClass = []));
    const digit = Math.floor(status / 100);
    return (byClass[digit] ??= requests.recorder(`${route} ${digit}xx`, { route, status: `${digit}xx` }));
  };
  const device = createDeviceCounters(registry, 'http');
  return {
    startRequest(route) {
      const started = performance.now();
      return (status) => recorderFor(route, status)((performance.now() - started) / 1000);
    },
    report: device.report,
    transferred: device.transferred,
  };
}
