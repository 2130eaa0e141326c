import t from 'tap';
import pino from 'pino';
import { Registry } from 'prom-client';
import { createReportLog, FAILED_REPORT_LINES_PER_SECOND } from '../../../src/actors/front-ends/report-log.js';

/** A real pino logger writing its lines into an array, and a clock the test moves. */
function setup() {
  const lines: { level: number; msg: string; suppressed?: number; transport?: string }[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const registry = new Registry();
  let clock = 1_700_000_000_000;
  const logReport = createReportLog(log, registry, FAILED_REPORT_LINES_PER_SECOND, () => clock);
  const suppressed = async () => (await registry.getSingleMetric('updater_report_log_lines_suppressed_total')!.get()).values[0]?.value ?? 0;
  return { lines, logReport, suppressed, advance: (ms: number) => (clock += ms) };
}

const failed = { device_id: 'd', success: false, rollback_reason: 'boot check failed' };

t.test('a burst of 3,000 failed reports writes at most the allowed WARN lines a second and counts the rest', async (t) => {
  const { lines, logReport, suppressed } = setup();
  for (let i = 0; i < 3000; i++) logReport(failed);
  t.equal(lines.filter((l) => l.level === 40).length, FAILED_REPORT_LINES_PER_SECOND, 'one second: only the allowed lines');
  t.equal(await suppressed(), 3000 - FAILED_REPORT_LINES_PER_SECOND, 'the rest are counted');
});

t.test('the next second logs again and first says how many were left out', async (t) => {
  const { lines, logReport, advance } = setup();
  for (let i = 0; i < 25; i++) logReport(failed, { transport: 'coap' });
  advance(1000);
  logReport(failed, { transport: 'coap' });
  const tail = lines.slice(FAILED_REPORT_LINES_PER_SECOND);
  t.equal(tail[0]?.suppressed, 25 - FAILED_REPORT_LINES_PER_SECOND, 'a summary line names the count');
  t.equal(tail[1]?.msg, 'update report', 'then the new second\'s report is logged');
  t.equal(tail[1]?.transport, 'coap', 'with the fields the front-end adds');
});

t.test('successes are info lines and never limited', async (t) => {
  const { lines, logReport, suppressed } = setup();
  for (let i = 0; i < 50; i++) logReport({ success: true });
  t.equal(lines.filter((l) => l.level === 30).length, 50);
  t.equal(await suppressed(), 0);
});
