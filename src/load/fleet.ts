import { randomBytes } from 'node:crypto';
import type { LoadIdentity } from './simulated-identity.js';

// The simulated fleet: which track each device follows and which binary it runs. A chosen
// share starts on superseded versions (so deltas are generated and downloaded); the rest run
// the current target (during a staged rollout: the stable target). Another chosen share fails
// every update it applies (--fail-rate), as a device whose new build does not boot. Half the
// fleet names the patch formats it applies (bsdiff-lzma first), half names none, as devices
// of today do: a soak keeps deltas of both formats generated, cached and downloaded.

export interface TrackInfo {
  readonly key: string;
  readonly current: string;
  /** Superseded targets the store still holds (delta sources). */
  readonly history: readonly string[];
}

export type LoadTransport = 'http' | 'coap';

export interface Device {
  readonly id: string;
  readonly transport: LoadTransport;
  readonly artifact: string;
  versionHash: string;
  /** A download is under way: no new heartbeat until it ends. */
  busy: boolean;
  /** This device's updates fail their boot check and are rolled back (--fail-rate). */
  readonly fails: boolean;
  /** Targets that failed here: not tried again in this run, as the agent's cooldown would hold off. */
  readonly failedTargets: Set<string>;
  /** The heartbeat's `delta_formats`, or none (such a device is served BSDIFF40). */
  readonly deltaFormats?: readonly string[];
  /** Its key and token with --device-auth (made at enrollment, kept across runs of one fleet). */
  identity?: LoadIdentity;
  /** The last heartbeat body sent, reused while the version and the second are the same. */
  encoded?: { second: number; versionHash: string; body: string | Buffer };
}

export const TIGHT_FORMATS: readonly string[] = ['bsdiff-lzma', 'bsdiff40'];

export function buildFleet(count: number, tracks: readonly TrackInfo[], oldShare: number, coapShare = 0, seed = randomBytes(4).toString('hex'), failShare = 0): Device[] {
  if (tracks.length === 0) throw new Error('the server has no tracks to simulate devices for');
  const devices: Device[] = [];
  for (let i = 0; i < count; i++) {
    const track = tracks[i % tracks.length]!;
    const old = track.history.length > 0 && spread(i, 1) < oldShare;
    const versionHash = old ? track.history[i % track.history.length]! : track.current;
    // Spread the shares evenly over the fleet rather than in blocks.
    const transport: LoadTransport = spread(i, 2) < coapShare ? 'coap' : 'http';
    const fails = spread(i, 3) < failShare;
    const deltaFormats = spread(i, 4) < 0.5 ? TIGHT_FORMATS : undefined;
    devices.push({ id: `load-${seed}-${i.toString().padStart(6, '0')}`, transport, artifact: track.key, versionHash, busy: false, fails, failedTargets: new Set(), deltaFormats });
  }
  return devices;
}

/**
 * Re-images a device, as when a unit is repaired or replaced: it comes back on a superseded
 * version of its track (owed a delta), or half of the time on an image the server has never
 * seen (owed the full file).
 */
export function reflash(device: Device, track: TrackInfo | undefined): void {
  if (!track) return;
  if (track.history.length > 0 && Math.random() < 0.5) device.versionHash = track.history[Math.floor(Math.random() * track.history.length)]!;
  else device.versionHash = randomBytes(32).toString('hex');
}

/** A fixed pseudo-random fraction in [0, 1) per device and purpose, evenly spread. */
function spread(index: number, salt: number): number {
  return (Math.imul(index + 1, 2654435761 + salt * 40503) >>> 0) / 2 ** 32;
}

export function heartbeatFields(device: Pick<Device, 'id' | 'versionHash' | 'artifact' | 'deltaFormats'>): Record<string, unknown> {
  return {
    device_id: device.id,
    version_hash: device.versionHash,
    hw_info: { arch: 'arm64', os: 'linux', free_ram: 268_435_456, free_disk: 1_073_741_824 },
    timestamp: Math.floor(Date.now() / 1000),
    version: '1.0.0',
    artifact: device.artifact,
    ...(device.deltaFormats ? { delta_formats: device.deltaFormats } : {}),
  };
}

/** The update report a simulated device sends after its boot check (docs/protocol.md, "Report"). */
export function reportFields(device: Device, previousHash: string, newHash: string, success: boolean): Record<string, unknown> {
  return {
    device_id: device.id,
    previous_hash: previousHash,
    new_hash: newHash,
    success,
    rollback_reason: success ? '' : 'boot health check failed (simulated by updater load --fail-rate)',
    timestamp: Math.floor(Date.now() / 1000),
  };
}

/** Reads the tracks from the admin API (with history) or, without a token, from /health. */
export async function discoverTracks(baseUrl: string, adminToken?: string): Promise<TrackInfo[]> {
  if (adminToken) {
    const response = await fetch(`${baseUrl}/admin/artifacts`, { headers: { authorization: `Bearer ${adminToken}` } });
    if (!response.ok) throw new Error(`GET /admin/artifacts answered ${response.status}`);
    const body = (await response.json()) as { artifacts: { artifact: string; hash: string; history?: string[]; rollout?: { state: string; stable_hash: string | null } | null }[] };
    // A fleet in the middle of a staged rollout runs the stable target, not the one rolling out.
    const startOn = (a: (typeof body.artifacts)[number]) => (a.rollout && a.rollout.state !== 'complete' && a.rollout.stable_hash ? a.rollout.stable_hash : a.hash);
    return body.artifacts.map((a) => ({ key: a.artifact, current: startOn(a), history: (a.history ?? []).filter((h) => h !== startOn(a)) }));
  }
  const response = await fetch(`${baseUrl}/health`);
  if (!response.ok) throw new Error(`GET /health answered ${response.status}`);
  const body = (await response.json()) as { artifacts: Record<string, { hash: string }> };
  return Object.entries(body.artifacts).map(([key, a]) => ({ key, current: a.hash, history: [] }));
}
