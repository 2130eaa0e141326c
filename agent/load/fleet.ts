import { randomBytes } from 'node:crypto';

// The simulated fleet: which track each device follows and which binary it runs. A chosen
// share starts on superseded versions (so deltas are generated and downloaded); the rest run
// the current target.

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
}

export function buildFleet(count: number, tracks: readonly TrackInfo[], oldShare: number, coapShare = 0, seed = randomBytes(4).toString('hex')): Device[] {
  if (tracks.length === 0) throw new Error('the server has no tracks to simulate devices for');
  const devices: Device[] = [];
  for (let i = 0; i < count; i++) {
    const track = tracks[i % tracks.length]!;
    const old = track.history.length > 0 && spread(i, 1) < oldShare;
    const versionHash = old ? track.history[i % track.history.length]! : track.current;
    // Spread the shares evenly over the fleet rather than in blocks.
    const transport: LoadTransport = spread(i, 2) < coapShare ? 'coap' : 'http';
    devices.push({ id: `load-${seed}-${i.toString().padStart(6, '0')}`, transport, artifact: track.key, versionHash, busy: false });
  }
  return devices;
}

/** A fixed pseudo-random fraction in [0, 1) per device and purpose, evenly spread. */
function spread(index: number, salt: number): number {
  return (Math.imul(index + 1, 2654435761 + salt * 40503) >>> 0) / 2 ** 32;
}

export function heartbeatFields(device: Device): Record<string, unknown> {
  return {
    device_id: device.id,
    version_hash: device.versionHash,
    hw_info: { arch: 'arm64', os: 'linux', free_ram: 268_435_456, free_disk: 1_073_741_824 },
    timestamp: Math.floor(Date.now() / 1000),
    version: '1.0.0',
    artifact: device.artifact,
  };
}

/** Reads the tracks from the admin API (with history) or, without a token, from /health. */
export async function discoverTracks(baseUrl: string, adminToken?: string): Promise<TrackInfo[]> {
  if (adminToken) {
    const response = await fetch(`${baseUrl}/admin/artifacts`, { headers: { authorization: `Bearer ${adminToken}` } });
    if (!response.ok) throw new Error(`GET /admin/artifacts answered ${response.status}`);
    const body = (await response.json()) as { artifacts: { artifact: string; hash: string; history?: string[] }[] };
    return body.artifacts.map((a) => ({ key: a.artifact, current: a.hash, history: a.history ?? [] }));
  }
  const response = await fetch(`${baseUrl}/health`);
  if (!response.ok) throw new Error(`GET /health answered ${response.status}`);
  const body = (await response.json()) as { artifacts: Record<string, { hash: string }> };
  return Object.entries(body.artifacts).map(([key, a]) => ({ key, current: a.hash, history: [] }));
}
