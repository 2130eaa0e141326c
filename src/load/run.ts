import { encodeHeartbeat, encodeReport } from '../shared/wire/cbor.js';
import { CoapLoadClient } from './coap-client.js';
import { withTimeout } from './deadline.js';
import { buildFleet, discoverTracks, heartbeatFields, reflash, reportFields, type Device } from './fleet.js';
import { HttpLoadClient } from './http-client.js';
import { LoadAuth, type DeviceAuthOptions, type DeviceAuthReport } from './load-auth.js';
import { judgeSoak, mb, readServerRss, type RssSample, type SoakVerdict } from './rss.js';
import { LoadStats } from './stats.js';
import type { LatencyRecord, LatencySummary } from './latency.js';
import { SaturationProbe, type HarnessLoad } from './saturation.js';

export interface LoadOptions {
  url: string;
  /** CoAP address for the share of devices that use CoAP. */
  coapUrl?: string;
  coapShare: number;
  devices: number;
  /** Heartbeats per second, all devices together (open loop). */
  rate: number;
  durationMs: number;
  oldShare: number;
  /** Share of devices whose updates fail their boot check and are reported as rolled back. */
  failRate: number;
  sockets: number;
  maxInflight: number;
  download: boolean;
  adminToken?: string;
  soak?: { boundBytes: number; maxSlopeBytesPerMinute: number };
  progress: (line: string) => void;
  /** Reuse a fleet from an earlier run (the soak's fill phase, then its plateau). */
  fleet?: Device[];
  /** Ends the run early once it returns true (checked every tick). */
  until?: () => boolean;
  /**
   * Ends the run once every device has nothing left to do: its last heartbeat was answered
   * with no update, or it applied (or failed) the update it was offered. Needs downloads.
   */
  untilUpdated?: boolean;
  /**
   * Share of heartbeats sent by a device that was just re-imaged: to a superseded version of
   * its track (a delta), or half of the time to an image the server does not know (a full
   * download). Keeps downloads, signed manifests and the caches busy for a whole soak.
   */
  reflashShare?: number;
  /** Read the server's RSS from /metrics every second (default true). */
  sampleRss?: boolean;
  /** Devices authenticate (devices.auth: on) and send their tokens; the fleet enrolls before the schedule starts. */
  deviceAuth?: DeviceAuthOptions;
}

export interface LoadReport {
  seconds: number;
  /** What ended the run: its duration, every device updated (untilUpdated), or the caller's `until` (the CLI: a signal). */
  ended: 'duration' | 'updated' | 'stopped';
  devices: number;
  tracks: number;
  requests_per_second: number;
  /** Heartbeats answered by transport. */
  transports: Record<string, number>;
  heartbeats: number;
  downloads: number;
  updates_applied: number;
  /** Updates that failed the (simulated) boot check and were reported with a rollback reason. */
  updates_failed: number;
  reports: number;
  latency_ms: { p50: number; p99: number; p999: number; max: number };
  outcomes: Record<string, number>;
  errors: Record<string, number>;
  bytes: { up: number; down: number };
  rss_mb: { samples: number; first: number; peak: number; last: number; slope_per_minute: number };
  soak?: SoakVerdict;
  /** Latency by kind: http_heartbeat, coap_heartbeat, download (a download's own GET). */
  latency_by_kind: Record<string, LatencySummary>;
  /** The same as mergeable histograms, for a caller that runs several load processes. */
  latency_records: Record<string, LatencyRecord>;
  /** This process's own load: a saturated harness measured itself. */
  harness: HarnessLoad;
  /** With deviceAuth: the enrollment and the re-authentications. */
  auth?: DeviceAuthReport;
}

const TICK_MS = 20;

/**
 * A device's heartbeat body, encoded once per version and reused for up to a minute: the
 * harness sends thousands a second and re-encoding the same fields each time was a share of
 * its CPU. The timestamp is then up to a minute old, as a device's clock may be; the server
 * records it and decides nothing by it.
 */
const BODY_REUSE_SECONDS = 60;
function heartbeatBody(device: Device, transport: 'http'): string;
function heartbeatBody(device: Device, transport: 'coap'): Buffer;
function heartbeatBody(device: Device, transport: 'http' | 'coap'): string | Buffer {
  const second = Math.floor(Date.now() / 1000);
  const cached = device.encoded;
  if (cached && second - cached.second < BODY_REUSE_SECONDS && cached.versionHash === device.versionHash) return cached.body;
  const fields = heartbeatFields(device);
  const body = transport === 'coap' ? encodeHeartbeat(fields) : JSON.stringify(fields);
  device.encoded = { second, versionHash: device.versionHash, body };
  return body;
}
/** The harness gives up on an answer after this; the request counts as an error of its kind. */
const HEARTBEAT_DEADLINE_MS = 10_000;
const DOWNLOAD_DEADLINE_MS = 60_000;

/** Drives the fleet for the chosen time, then reports. Bounded: it stops by itself. */
export async function runLoad(options: LoadOptions): Promise<LoadReport> {
  const tracks = await discoverTracks(options.url, options.adminToken);
  const coapShare = options.coapUrl ? options.coapShare : 0;
  const fleet = options.fleet ?? buildFleet(options.devices, tracks, options.oldShare, coapShare, undefined, options.failRate);
  const trackOf = new Map(tracks.map((t) => [t.key, t]));
  const http = new HttpLoadClient(options.url, options.sockets);
  const coap = options.coapUrl ? new CoapLoadClient(options.coapUrl) : undefined;
  const clientOf = (device: Device) => (device.transport === 'coap' ? coap! : http);
  // Errors of the enrollment, which runs before the run's clock (and its stats) start.
  const enrollErrors = new LoadStats();
  let countError = (kind: string) => enrollErrors.error(kind);
  const auth = options.deviceAuth ? new LoadAuth(http, coap, options.deviceAuth, (kind) => countError(kind)) : undefined;
  try {
    await auth?.enroll(fleet, options.url, options.adminToken, options.progress);
  } catch (err) {
    http.close();
    coap?.close();
    throw err;
  }
  /** Sends with the device's token when the devices authenticate (re-authenticating on a 401 / 4.01). */
  const authorized = <T>(device: Device, send: (token?: string) => Promise<T>, statusOf: (answer: T) => number): Promise<T> =>
    (auth ? auth.withToken(device, send, statusOf) : send());
  const stats = new LoadStats();
  for (const [kind, n] of enrollErrors.errors) stats.errors.set(kind, n);
  countError = (kind) => stats.error(kind);
  const probe = new SaturationProbe();
  let notSent = 0;
  const rss: RssSample[] = [];
  let inflight = 0;
  let sent = 0;
  let cursor = 0;
  const pending = new Set<Promise<void>>();
  // Devices with something left to do (untilUpdated): every one until its first answer.
  const unsettled = new Set(fleet);

  const nextDevice = (): Device | undefined => {
    for (let tries = 0; tries < fleet.length; tries++) {
      const device = fleet[cursor++ % fleet.length]!;
      if (!device.busy) return device;
    }
    return undefined;
  };

  const downloading = { http: 0, coap: 0 };
  const beat = async (device: Device) => {
    const started = performance.now();
    stats.requests++;
    // One cycle at a time per device, as a real one: a slow answer must not let the same
    // device ask again and take the same update twice.
    device.busy = true;
    try {
      if (options.reflashShare && Math.random() < options.reflashShare) reflash(device, trackOf.get(device.artifact));
      const answer = await withTimeout(authorized(device, (token) => (device.transport === 'coap'
        ? coap!.heartbeat(heartbeatBody(device, 'coap'), token)
        : http.heartbeat(heartbeatBody(device, 'http'), token)), (a) => a.status), HEARTBEAT_DEADLINE_MS, `${device.transport}_heartbeat_timeout`);
      const ms = performance.now() - started;
      stats.recordLatency(ms);
      stats.recordKind(`${device.transport}_heartbeat`, ms);
      if (device.transport === 'http') stats.recordKind('http_heartbeat_socket_wait', answer.queuedMs);
      stats.heartbeats++;
      stats.bytesUp += answer.bytesUp;
      stats.bytesDown += answer.bytesDown;
      if (answer.status !== 200 || !answer.manifest) return stats.error(`${device.transport}_${answer.status}`);
      stats.outcome(device.transport);
      const m = answer.manifest;
      if (!m.update_available) {
        unsettled.delete(device);
        return stats.outcome('up_to_date');
      }
      unsettled.add(device);
      if (!m.signature) return stats.outcome('retry_later');
      stats.outcome(m.delta_endpoint ? `delta_offered_${m.delta_format ?? 'bsdiff40'}` : 'full_offered');
      if (device.failedTargets.has(m.target_hash)) {
        unsettled.delete(device);
        return stats.outcome('failed_target_skipped');
      }
      if (options.download) await fetchUpdate(device, m.delta_endpoint ?? m.binary_endpoint!, m.delta_hash, m.target_hash);
    } catch (err) {
      stats.error((err as NodeJS.ErrnoException).code ?? (err as Error).message);
    } finally {
      device.busy = false;
    }
  };

  const fetchUpdate = async (device: Device, path: string, transferHash: string, targetHash: string) => {
    stats.requests++;
    const started = performance.now();
    downloading[device.transport]++;
    const { status, size, hash } = await withTimeout(authorized(device, (token) => clientOf(device).download(path, DOWNLOAD_DEADLINE_MS, token), (d) => d.status), DOWNLOAD_DEADLINE_MS, `${device.transport}_download_timeout`)
      .finally(() => downloading[device.transport]--);
    stats.downloads++;
    stats.recordKind('download', performance.now() - started);
    stats.bytesDown += size;
    if (status !== 200) return stats.error(`${device.transport}_download_${status}`);
    if (hash !== transferHash) return stats.error(`${device.transport}_download_hash_mismatch`);
    // The swap and reboot are simulated; the boot check fails for the --fail-rate share.
    const previous = device.versionHash;
    const success = !device.fails;
    if (success) {
      device.versionHash = targetHash;
      stats.updatesApplied++;
    } else {
      device.failedTargets.add(targetHash);
      stats.updatesFailed++;
    }
    await sendReport(device, previous, targetHash, success);
  };

  const sendReport = async (device: Device, previous: string, target: string, success: boolean) => {
    stats.requests++;
    const fields = reportFields(device, previous, target, success);
    const status = await withTimeout(authorized(device, (token) => (device.transport === 'coap'
      ? coap!.report(encodeReport(fields), token)
      : http.report(JSON.stringify(fields), token)), (n) => n), HEARTBEAT_DEADLINE_MS, `${device.transport}_report_timeout`);
    if (status !== 204) return stats.error(`${device.transport}_report_${status}`);
    stats.reports++;
    // Settled once the server has the outcome; a lost report is made good by the next heartbeat.
    unsettled.delete(device);
  };

  const rssTimer = setInterval(() => {
    if (options.sampleRss === false) return;
    // readServerRss settles with undefined on any failure.
    void readServerRss(options.url).then((bytes) => {
      if (bytes !== undefined) rss.push({ atSeconds: stats.elapsedSeconds(), bytes });
    });
  }, 1000);
  let lastLine = { at: 0, heartbeats: 0 };
  const progressTimer = setInterval(() => {
    const t = stats.elapsedSeconds();
    const rate = (stats.heartbeats - lastLine.heartbeats) / Math.max(0.001, t - lastLine.at);
    lastLine = { at: t, heartbeats: stats.heartbeats };
    const last = rss[rss.length - 1];
    // Which transport's downloads are under way, so that one that hangs is told apart.
    const under = downloading.http + downloading.coap > 0 ? ` (downloading: ${downloading.http} http, ${downloading.coap} coap)` : '';
    options.progress(`t=${t.toFixed(0)}s heartbeats/s=${rate.toFixed(0)} in-flight=${inflight}${under} downloads=${stats.downloads} errors=${stats.errorCount}${last ? ` server-rss=${mb(last.bytes)}MB` : ''}`);
  }, 1000);

  const deadline = performance.now() + options.durationMs;
  let ended: LoadReport['ended'] = 'duration';
  while (performance.now() < deadline) {
    if (options.until?.()) {
      ended = 'stopped';
      break;
    }
    if (options.untilUpdated && unsettled.size === 0) {
      ended = 'updated';
      break;
    }
    const due = Math.floor(options.rate * stats.elapsedSeconds()) - sent;
    for (let i = 0; i < due; i++) {
      sent++;
      const device = nextDevice();
      if (!device || inflight >= options.maxInflight) {
        notSent++;
        stats.error('client_saturated');
        continue;
      }
      inflight++;
      const p = beat(device).finally(() => {
        inflight--;
        pending.delete(p);
      });
      pending.add(p);
    }
    await new Promise((r) => setTimeout(r, TICK_MS));
  }
  const harness = probe.finish(sent - notSent, notSent);
  await Promise.allSettled([...pending]);
  clearInterval(rssTimer);
  clearInterval(progressTimer);
  http.close();
  coap?.close();

  const seconds = stats.elapsedSeconds();
  const peak = rss.reduce((m, s) => Math.max(m, s.bytes), 0);
  const soak = options.soak ? judgeSoak(rss, options.soak.boundBytes, options.soak.maxSlopeBytesPerMinute) : undefined;
  return {
    seconds,
    ended,
    devices: fleet.length,
    tracks: tracks.length,
    requests_per_second: stats.requests / seconds,
    transports: { http: stats.outcomes.get('http') ?? 0, coap: stats.outcomes.get('coap') ?? 0 },
    heartbeats: stats.heartbeats,
    downloads: stats.downloads,
    updates_applied: stats.updatesApplied,
    updates_failed: stats.updatesFailed,
    reports: stats.reports,
    latency_ms: stats.percentiles(),
    outcomes: Object.fromEntries([...stats.outcomes].filter(([kind]) => kind !== 'http' && kind !== 'coap')),
    errors: Object.fromEntries(stats.errors),
    bytes: { up: stats.bytesUp, down: stats.bytesDown },
    rss_mb: {
      samples: rss.length,
      first: Number(mb(rss[0]?.bytes ?? 0)),
      peak: Number(mb(peak)),
      last: Number(mb(rss[rss.length - 1]?.bytes ?? 0)),
      slope_per_minute: Number(mb(soak?.slopeBytesPerMinute ?? 0)),
    },
    ...(soak ? { soak } : {}),
    latency_by_kind: Object.fromEntries([...stats.kinds].map(([kind, h]) => [kind, h.summary()])),
    latency_records: Object.fromEntries([...stats.kinds].map(([kind, h]) => [kind, h.toRecord()])),
    harness,
    ...(auth ? { auth: auth.report() } : {}),
  };
}
