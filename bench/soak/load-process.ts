import { startHostileTraffic } from '../../src/load/hostile-traffic.js';
import { buildFleet, discoverTracks } from '../../src/load/fleet.js';
import { runLoad, type LoadOptions, type LoadReport } from '../../src/load/run.js';

// One load process of the soak (forked by soak.ts, pinned to the load cores): its share of the
// fleet, first until the parent says every budget is filled, then for the plateau window.
// Reports go back over the IPC channel; progress lines to stderr.

export interface LoadProcessOptions {
  readonly url: string;
  readonly coapUrl?: string;
  readonly adminToken: string;
  readonly devices: number;
  /** Heartbeats per second of this process. */
  readonly rate: number;
  readonly coapShare: number;
  readonly oldShare: number;
  readonly reflashShare: number;
  readonly seed: string;
  readonly part: number;
  readonly parts: number;
  readonly fillMaxSeconds: number;
  readonly windowSeconds: number;
  /** Hostile inputs per second from this process (0: none). */
  readonly hostilePerSecond: number;
  /** Share of devices whose updates fail their boot check and are reported as failed. */
  readonly failShare: number;
  /**
   * The server runs with devices.auth on: this process preauthorizes its share of the fleet,
   * enrolls it at this many POST /auth a second before the fill, and its hostile traffic adds
   * heartbeats without a token. 0: no device auth.
   */
  readonly authRatePerSecond: number;
}

export type LoadProcessMessage =
  | { type: 'phase'; phase: 'fill' | 'plateau'; report: LoadReport }
  | { type: 'hostile'; counts: Record<string, number> };

export type ParentMessage = { type: 'filled' };

async function main(): Promise<void> {
  const o = JSON.parse(process.argv[2]!) as LoadProcessOptions;
  const send = (message: LoadProcessMessage) => new Promise<void>((resolve) => process.send!(message, () => resolve()));
  let filled = false;
  process.on('message', (m: ParentMessage) => {
    if (m.type === 'filled') filled = true;
  });
  const tracks = await discoverTracks(o.url, o.adminToken);
  // Every process builds the same fleet from the seed and keeps its own share of it.
  const fleet = buildFleet(o.devices, tracks, o.oldShare, o.coapUrl ? o.coapShare : 0, o.seed, o.failShare).filter((_, i) => i % o.parts === o.part);
  const deviceAuth = o.authRatePerSecond > 0;
  const hostile = o.hostilePerSecond > 0 ? startHostileTraffic({ httpUrl: o.url, ...(o.coapUrl ? { coapUrl: o.coapUrl } : {}), perSecond: o.hostilePerSecond, unauthenticated: deviceAuth }) : undefined;
  const base: LoadOptions = {
    url: o.url,
    ...(o.coapUrl ? { coapUrl: o.coapUrl } : {}),
    coapShare: o.coapShare,
    devices: fleet.length,
    rate: o.rate,
    durationMs: o.fillMaxSeconds * 1000,
    oldShare: o.oldShare,
    failRate: o.failShare,
    // Keep-alive sockets per agent (heartbeats and reports; downloads have as many of their
    // own). Real devices each have a connection: with 32, a pause of the server's of 25 ms left
    // every socket waiting and the next heartbeats queued in the harness (docs/memory.md).
    sockets: 128,
    maxInflight: 1024,
    download: true,
    adminToken: o.adminToken,
    fleet,
    reflashShare: o.reflashShare,
    sampleRss: false,
    // Enrolled in the fill's run; the plateau's run finds every token on the fleet.
    ...(deviceAuth ? { deviceAuth: { ratePerSecond: o.authRatePerSecond, preauthorize: true } } : {}),
    progress: (line) => process.stderr.write(`  [load ${o.part}] ${line}\n`),
  };
  const quiet = { ...base, progress: () => undefined };
  await send({ type: 'phase', phase: 'fill', report: await runLoad({ ...quiet, until: () => filled }) });
  await send({ type: 'phase', phase: 'plateau', report: await runLoad({ ...(o.part === 0 ? base : quiet), durationMs: o.windowSeconds * 1000 }) });
  if (hostile) await send({ type: 'hostile', counts: await hostile.stop() });
  process.disconnect();
  // Everything is reported: a socket or retransmission timer a client library still holds
  // must not keep this process (and the soak waiting for it) alive.
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`load process failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
