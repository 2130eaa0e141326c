import { Counter, Histogram, type Registry } from 'prom-client';

export interface HttpMetrics {
  /** Returns the function that records the request's end with its status. */
  startRequest(route: string): (status: number) => void;
  report(success: boolean): void;
  transferred(kind: string, bytes: number): void;
}

export function createHttpMetrics(registry: Registry): HttpMetrics {
  const requests = new Histogram({
    name: 'updater_http_request_seconds',
    help: 'HTTP requests by route and status class',
    labelNames: ['route', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    registers: [registry],
  });
  const reports = new Counter({
    name: 'updater_update_reports_total',
    help: 'Update reports received from devices, by outcome',
    labelNames: ['result'],
    registers: [registry],
  });
  const bytes = new Counter({
    name: 'updater_transfer_bytes_total',
    help: 'Bytes of deltas and compressed binaries sent to devices',
    labelNames: ['kind', 'transport'],
    registers: [registry],
  });
  return {
    startRequest(route) {
      const started = process.hrtime.bigint();
      return (status) => {
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        requests.observe({ route, status: `${Math.floor(status / 100)}xx` }, seconds);
      };
    },
    report: (success) => reports.inc({ result: success ? 'success' : 'failure' }),
    transferred: (kind, n) => bytes.inc({ kind, transport: 'http' }, n),
  };
}
