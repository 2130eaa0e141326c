import { UNAUTHENTICATED_DEVICES } from '../../src/load/hostile-traffic.js';
import type { LoadReport } from '../../src/load/run.js';
import { parseMetrics } from './scrape.js';

// The soak with devices.auth on (SOAK_DEVICE_AUTH=on): what it records of device identity, and
// what it judges beside the memory verdict. Every device of the load must have enrolled, and
// the hostile heartbeats without a token must each have been refused (401 / 4.01) and none of
// their devices recorded. Those refusals are the server doing its job, not errors: they are
// counted here and in the server's updater_device_tokens_refused_total, never in the load's
// errors, which the verdict judges.

export interface SoakDeviceAuth {
  /** Devices holding a token after the enrollment, of all load processes. */
  readonly enrolled: number;
  /** The slowest load process's enrollment (they enroll side by side). */
  readonly enroll_seconds: number;
  readonly auth_requests: number;
  /** Requests refused 401 / 4.01 and answered after a new auth, by transport (not errors). */
  readonly reauthenticated: Record<string, number>;
  /** The server's updater_device_tokens_refused_total by reason (the hostile heartbeats are the `missing` ones). */
  readonly tokens_refused: Record<string, number>;
  /** The server's updater_device_auth_requests_total by outcome. */
  readonly auth_outcomes: Record<string, number>;
  /** How the hostile heartbeats without a token were answered, by transport and status. */
  readonly unauthenticated_answers: Record<string, number>;
  readonly unauthenticated_sent: number;
  /** Devices of those heartbeats that the inventory holds (must be none). */
  readonly strangers_recorded: readonly string[];
}

const ANSWERED = /^(http|coap)_unauthenticated_heartbeat_answered_(.+)$/;
const REFUSED: Record<string, string> = { http: '401', coap: '4.01' };

export async function deviceAuthRecord(url: string, adminToken: string, reports: readonly LoadReport[], hostile: Record<string, number>): Promise<SoakDeviceAuth> {
  const auths = reports.flatMap((r) => (r.auth ? [r.auth] : []));
  const reauthenticated: Record<string, number> = {};
  for (const a of auths) for (const [t, n] of Object.entries(a.reauthenticated)) reauthenticated[t] = (reauthenticated[t] ?? 0) + n;
  const metrics = parseMetrics(await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5000) })).text());
  const byLabel = (name: string, label: string) => {
    const out: Record<string, number> = {};
    for (const s of metrics) if (s.name === name && s.labels[label]) out[s.labels[label]!] = (out[s.labels[label]!] ?? 0) + s.value;
    return out;
  };
  const strangers: string[] = [];
  for (const id of UNAUTHENTICATED_DEVICES) {
    const response = await fetch(`${url}/admin/devices/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${adminToken}` }, signal: AbortSignal.timeout(30_000) });
    await response.arrayBuffer();
    if (response.status !== 404) strangers.push(`${id} (GET /admin/devices/${id} answered ${response.status})`);
  }
  return {
    // The fill's run enrolls; the plateau's finds every token in place and enrolls none.
    enrolled: auths.reduce((n, a) => n + a.enrolled, 0),
    enroll_seconds: auths.reduce((m, a) => Math.max(m, a.enroll_seconds), 0),
    auth_requests: auths.reduce((n, a) => n + a.auth_requests, 0),
    reauthenticated,
    tokens_refused: byLabel('updater_device_tokens_refused_total', 'reason'),
    auth_outcomes: byLabel('updater_device_auth_requests_total', 'outcome'),
    unauthenticated_answers: Object.fromEntries(Object.entries(hostile).filter(([k]) => ANSWERED.test(k))),
    unauthenticated_sent: (hostile.http_unauthenticated_heartbeat ?? 0) + (hostile.coap_unauthenticated_heartbeat ?? 0),
    strangers_recorded: strangers,
  };
}

/** Why the soak fails on device identity; none when every device enrolled and every stranger was refused. */
export function judgeDeviceAuth(record: SoakDeviceAuth, devices: number): string[] {
  const reasons: string[] = [];
  if (record.enrolled < devices) reasons.push(`only ${record.enrolled} of ${devices} devices enrolled`);
  const answered = Object.entries(record.unauthenticated_answers);
  const admitted = answered.filter(([k]) => {
    const [, transport, status] = ANSWERED.exec(k)!;
    return status !== REFUSED[transport!];
  });
  if (admitted.length > 0) reasons.push(`heartbeats without a token were answered other than 401 / 4.01: ${JSON.stringify(Object.fromEntries(admitted))}`);
  if (record.unauthenticated_sent > 0 && answered.length === 0) reasons.push(`${record.unauthenticated_sent} heartbeats without a token were sent and none was answered: the refusal went unchecked`);
  if (record.strangers_recorded.length > 0) reasons.push(`devices that never authenticated were recorded: ${record.strangers_recorded.join(', ')}`);
  return reasons;
}
