import type { Manifest } from '../../src/messages/manifester.js';

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any; headers: Headers }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined, headers: response.headers };
}

/** `token`: a device token (devices.auth on), sent as `Authorization: Bearer`. */
export async function heartbeat(baseUrl: string, versionHash: string, artifact?: string, token?: string, deltaFormats?: string[]): Promise<{ status: number; json: any }> {
  return postJson(`${baseUrl}/heartbeat`, {
    device_id: 'device-0001',
    version_hash: versionHash,
    hw_info: { arch: 'amd64', os: 'linux', free_ram: 1 << 28, free_disk: 1 << 30 },
    timestamp: Math.floor(Date.now() / 1000),
    version: '1.0.0',
    ...(artifact !== undefined ? { artifact } : {}),
    ...(deltaFormats ? { delta_formats: deltaFormats } : {}),
  }, token ? { authorization: `Bearer ${token}` } : {});
}

/** Heartbeats until the manifest is signed (the delta or full file is ready). */
export async function heartbeatUntilSigned(baseUrl: string, versionHash: string, artifact?: string, timeoutMs = 60_000, token?: string, deltaFormats?: string[]): Promise<Manifest> {
  const started = Date.now();
  for (;;) {
    const { status, json } = await heartbeat(baseUrl, versionHash, artifact, token, deltaFormats);
    if (status !== 200) throw new Error(`heartbeat answered ${status}: ${JSON.stringify(json)}`);
    if (json.signature) return json as Manifest;
    if (Date.now() - started > timeoutMs) throw new Error(`no signed manifest within ${timeoutMs} ms: ${JSON.stringify(json)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function getBytes(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const response = await fetch(url, { headers });
  return { status: response.status, body: Buffer.from(await response.arrayBuffer()), headers: response.headers };
}

/** Reads a metric sample value from the Prometheus text (0 when absent). */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== '{' && rest[0] !== ' ') continue;
    if (wanted.every((w) => rest.includes(w))) return Number(line.split(' ').pop());
  }
  return 0;
}
