import { Gauge, type Registry } from 'prom-client';
import { plainCounter } from '../../shared/plain-counter.js';
import type { KeyCertificate } from '../../shared/release/certificate.js';
import type { StatementCounters } from './release-statements.js';

const CAUSES = ['change', 'renewal', 'heartbeat'] as const;

/** The metrics of release statements and of the signing key's certificate (docs/metrics.md). */
export function createReleaseMetrics(registry: Registry, statements: () => number, certificate: KeyCertificate | undefined): StatementCounters {
  const counts = plainCounter(registry, {
    name: 'updater_release_statements_signed_total',
    help: 'Release statements signed, by cause: a change of the tracks, the renewal timer, or a heartbeat that found none (expected to stay 0)',
    label: 'cause',
    values: CAUSES,
  });
  new Gauge({
    name: 'updater_release_statements',
    help: 'Release statements held, one per (track, target, label, sequence) served',
    registers: [registry],
    collect() {
      this.set(statements());
    },
  });
  if (certificate) {
    new Gauge({
      name: 'updater_signing_certificate_expiry_timestamp_seconds',
      help: 'not_after of the signing key\'s certificate (signing.certificate_file), Unix seconds; alert on it minus time()',
      labelNames: ['serial'],
      registers: [registry],
      collect() {
        this.set({ serial: String(certificate.serial) }, certificate.not_after);
      },
    });
  }
  return { signed: (cause) => counts[cause]++ };
}
