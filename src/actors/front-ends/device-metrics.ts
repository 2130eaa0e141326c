import { Counter, type Registry } from 'prom-client';

/**
 * Counters both front-ends keep under the same names and labels, so the supervisor's merge
 * adds HTTP and CoAP together.
 */
export function createDeviceCounters(registry: Registry, transport: 'http' | 'coap'): {
  report(success: boolean): void;
  transferred(kind: string, bytes: number): void;
} {
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
    report: (success) => reports.inc({ result: success ? 'success' : 'failure' }),
    transferred: (kind, n) => bytes.inc({ kind, transport }, n),
  };
}
