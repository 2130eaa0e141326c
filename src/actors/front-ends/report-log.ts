import { Counter, type Registry } from 'prom-client';
import type { Logger } from '../../shared/logger.js';

/** Failed update reports a front-end writes to its log in one second; the rest are counted. */
export const FAILED_REPORT_LINES_PER_SECOND = 10;

/**
 * The log line of each update report, for both front-ends. A success is an info line. A
 * failure is a WARN line, but at most `perSecond` of them a second: each is about 900 bytes,
 * and a burst of failing (or, with device auth off, forged) reports would otherwise write
 * megabytes of log. The rest are counted in `updater_report_log_lines_suppressed_total`, and
 * the first failure of the next second says how many of the previous one went unlogged.
 */
export function createReportLog(
  log: Logger,
  registry: Registry,
  perSecond = FAILED_REPORT_LINES_PER_SECOND,
  now: () => number = Date.now,
): (report: { readonly success: boolean }, fields?: Readonly<Record<string, unknown>>) => void {
  const suppressed = new Counter({
    name: 'updater_report_log_lines_suppressed_total',
    help: `Failed update reports not written to the log (at most ${perSecond} a second are)`,
    registers: [registry],
  });
  let second = -1;
  let logged = 0;
  let held = 0;
  return (report, fields) => {
    if (report.success) {
      log.info({ report, ...fields }, 'update report');
      return;
    }
    const current = Math.floor(now() / 1000);
    if (current !== second) {
      if (held > 0) log.warn({ suppressed: held }, 'failed update reports left out of the log in the last second (counted in updater_report_log_lines_suppressed_total)');
      second = current;
      logged = 0;
      held = 0;
    }
    if (logged < perSecond) {
      logged++;
      log.warn({ report, ...fields }, 'update report');
    } else {
      held++;
      suppressed.inc();
    }
  };
}
