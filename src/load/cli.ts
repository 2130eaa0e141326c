import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseDuration } from '../shared/duration.js';
import { runLoad, type LoadOptions, type LoadReport } from './run.js';
import { saturationReasons } from './saturation.js';

export const LOAD_HELP = `usage: updater load [options]

Simulates a fleet of devices against a running server (loopback or your own test hosts only)
and reports requests/s, latency p50/p99/p999 (all heartbeats, then by kind: HTTP heartbeat,
CoAP heartbeat, download), its own load (a saturated harness measures itself), errors by
kind, bytes transferred and the server's RSS sampled every second from /metrics. Stops by
itself after --duration, or earlier with --until-updated. SIGINT (Ctrl-C) or SIGTERM ends the
run early too: no new request is sent, those in flight are waited for, and the report covers
the run so far (a second signal ends the process at once).

  --url URL                 server base address (default http://127.0.0.1:8080)
  --coap-url URL            CoAP address (e.g. coap://127.0.0.1:5683) for --coap-share
  --coap-share F            share of devices on CoAP, 0..1 (default 0; needs --coap-url)
  --devices N               simulated devices (default 1000)
  --rate N                  heartbeats per second, all devices together (default 500)
  --duration D              how long to run, e.g. 30s, 5m (default 30s)
  --until-updated           end the run before --duration once every device has nothing left
                            to do: its last heartbeat was answered with no update, or it applied
                            (or failed, see --fail-rate) the update it was offered and reported it
  --old-share F             share of devices starting on superseded versions, 0..1 (default 0.1)
  --fail-rate F             share of devices whose updates fail the boot check, 0..1 (default 0):
                            each reports the failure with a rollback reason and stays on its
                            version, so a staged rollout can be watched pausing itself
  --sockets N               keep-alive connections (default 64; one idle for 5 s is closed)
  --max-inflight N          requests in flight at most (default 512)
  --no-download             do not fetch the deltas and binaries offered
  --admin-token-file FILE   read track histories from GET /admin/artifacts (needed for --old-share)
  --device-auth             for a server with devices.auth on: each device gets an Ed25519 key,
                            authenticates (POST /auth on its own transport) before the run, sends
                            its token on every request, and on a 401 / 4.01 authenticates again
                            and repeats the request (counted as reauthenticated, not an error).
                            Needs --admin-token-file (with auth on, /health hides the tracks)
  --preauthorize            with --device-auth, for enrollment: preauthorized: add every key with
                            POST /admin/devices/preauthorize first (the admin token's role: operate)
  --auth-rate N             with --device-auth, POST /auth per second while the fleet enrolls
                            (default 500: 10,000 devices in about 20 s when the server keeps up)
  --soak                    fail (exit 1) when RSS passes --rss-bound-mb or keeps growing
  --rss-bound-mb N          RSS bound for --soak (default 1024)
  --rss-slope-mb N          allowed growth of the RSS floor after warm-up, MB per minute (default 2)
  --json                    print the final report as JSON
`;

export async function loadCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      url: { type: 'string', default: 'http://127.0.0.1:8080' },
      'coap-url': { type: 'string' },
      'coap-share': { type: 'string', default: '0' },
      devices: { type: 'string', default: '1000' },
      rate: { type: 'string', default: '500' },
      duration: { type: 'string', default: '30s' },
      'until-updated': { type: 'boolean', default: false },
      'old-share': { type: 'string', default: '0.1' },
      'fail-rate': { type: 'string', default: '0' },
      sockets: { type: 'string', default: '64' },
      'max-inflight': { type: 'string', default: '512' },
      'no-download': { type: 'boolean', default: false },
      'admin-token-file': { type: 'string' },
      'device-auth': { type: 'boolean', default: false },
      preauthorize: { type: 'boolean', default: false },
      'auth-rate': { type: 'string', default: '500' },
      soak: { type: 'boolean', default: false },
      'rss-bound-mb': { type: 'string', default: '1024' },
      'rss-slope-mb': { type: 'string', default: '2' },
      json: { type: 'boolean', default: false },
    },
  });
  const number = (name: string, min: number, max: number, integer = true): number => {
    const n = Number(values[name as keyof typeof values]);
    if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) throw new RangeError(`--${name} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
    return n;
  };
  if (Number(values['coap-share']) > 0 && !values['coap-url']) throw new RangeError('--coap-share needs --coap-url');
  if (values['device-auth'] && !values['admin-token-file']) throw new RangeError('--device-auth needs --admin-token-file (with devices.auth on, /health does not show the tracks)');
  if (values.preauthorize && !values['device-auth']) throw new RangeError('--preauthorize needs --device-auth');
  if (values['until-updated'] && values['no-download']) throw new RangeError('--until-updated needs downloads: a device that does not download never applies its update (drop --no-download)');
  const durationMs = parseDuration(values.duration);
  if (durationMs === undefined || durationMs < 1000 || durationMs > 24 * 3600_000) throw new RangeError('--duration must be a duration from 1s to 24h, like 30s or 5m');
  const options: LoadOptions = {
    url: values.url!.replace(/\/$/, ''),
    ...(values['coap-url'] ? { coapUrl: values['coap-url'] } : {}),
    coapShare: number('coap-share', 0, 1, false),
    devices: number('devices', 1, 1_000_000),
    rate: number('rate', 1, 1_000_000),
    durationMs,
    oldShare: number('old-share', 0, 1, false),
    failRate: number('fail-rate', 0, 1, false),
    sockets: number('sockets', 1, 10_000),
    maxInflight: number('max-inflight', 1, 100_000),
    download: !values['no-download'],
    ...(values['admin-token-file'] ? { adminToken: readFileSync(values['admin-token-file'], 'utf8').trim() } : {}),
    ...(values['device-auth'] ? { deviceAuth: { ratePerSecond: number('auth-rate', 1, 100_000), preauthorize: values.preauthorize! } } : {}),
    ...(values.soak ? { soak: { boundBytes: number('rss-bound-mb', 1, 1_000_000) * 1024 * 1024, maxSlopeBytesPerMinute: number('rss-slope-mb', 0, 100_000, false) * 1024 * 1024 } } : {}),
    untilUpdated: values['until-updated']!,
    progress: (line) => process.stderr.write(`${line}\n`),
  };
  // The first signal ends the run with its report; it removes the handlers, so a second one
  // ends the process the default way. A signal during --device-auth's enrollment ends the run
  // as soon as the enrollment is done.
  let interrupted = false;
  const interrupt = () => {
    interrupted = true;
    quiet();
  };
  const quiet = () => {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
  };
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);
  const report = await runLoad({ ...options, until: () => interrupted }).finally(quiet);
  process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
  if (report.heartbeats === 0) return 1;
  return report.soak && !report.soak.ok ? 1 : 0;
}

const ENDED: Record<LoadReport['ended'], string> = { duration: '', updated: ' (ended: every device updated)', stopped: ' (ended early by a signal)' };

export function formatReport(r: LoadReport): string {
  const lines = [
    `devices ${r.devices} over ${r.tracks} tracks for ${r.seconds.toFixed(1)} s${ENDED[r.ended]}`,
    `requests/s      ${r.requests_per_second.toFixed(0)}   (heartbeats over http ${r.transports.http}, coap ${r.transports.coap})`,
    `heartbeats      ${r.heartbeats}   downloads ${r.downloads}   updates applied ${r.updates_applied}   failed ${r.updates_failed}   reports ${r.reports}`,
    `latency ms      p50 ${r.latency_ms.p50.toFixed(2)}   p99 ${r.latency_ms.p99.toFixed(2)}   p999 ${r.latency_ms.p999.toFixed(2)}   max ${r.latency_ms.max.toFixed(2)}`,
    ...Object.entries(r.latency_by_kind).map(([kind, l]) => `  ${kind.padEnd(14)}p50 ${l.p50.toFixed(2)}   p99 ${l.p99.toFixed(2)}   p999 ${l.p999.toFixed(2)}   max ${l.max.toFixed(2)}   (${l.count})`),
    `harness         event loop busy ${(r.harness.event_loop_utilization * 100).toFixed(0)} % (CPU ${r.harness.cpu_cores.toFixed(2)} cores), timers late p99 ${r.harness.event_loop_delay_p99_ms} ms, not sent ${r.harness.not_sent}${saturationReasons('this process', r.harness).length > 0 ? '   SATURATED: the figures above measure the harness' : ''}`,
    `outcomes        ${JSON.stringify(r.outcomes)}`,
    `errors          ${JSON.stringify(r.errors)}`,
    ...(r.auth ? [`device auth     ${r.auth.enrolled} enrolled in ${r.auth.enroll_seconds.toFixed(1)} s   auth requests ${r.auth.auth_requests}   reauthenticated after 401 ${JSON.stringify(r.auth.reauthenticated)}`] : []),
    `bytes           up ${r.bytes.up}   down ${r.bytes.down}`,
    `server RSS MB   first ${r.rss_mb.first}   peak ${r.rss_mb.peak}   last ${r.rss_mb.last}   (${r.rss_mb.samples} samples)`,
  ];
  if (r.soak) lines.push(`soak            ${r.soak.ok ? 'PASS' : `FAIL: ${r.soak.reasons.join('; ')}`}   slope ${(r.soak.slopeBytesPerMinute / 1048576).toFixed(2)} MB/min`);
  return `${lines.join('\n')}\n`;
}
