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
  const recorders = new Map<string, (seconds: number) => void>();
  const device = createDeviceCounters(registry, 'http');
  return {
    startRequest(route) {
      const started = performance.now();
      return (status) => {
        const statusClass = `${Math.floor(status / 100)}xx`;
        const key = `${route} ${statusClass}`;
        let record = recorders.get(key);
        if (!record) {
          record = requests.recorder(key, { route, status: statusClass });
          recorders.set(key, record);
        }
        record((performance.now() - started) / 1000);
      };
    },
    report: device.report,
    transferred: device.transferred,
  };
}
