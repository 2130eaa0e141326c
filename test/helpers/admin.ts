import { ADMIN_TOKEN } from './fixture.js';

export interface AdminAnswer {
  status: number;
  json: any;
  headers: Headers;
}

/** One admin call with the fixture's token (or `token`, or none when null). */
export async function adminCall(baseUrl: string, method: string, path: string, body?: unknown, token: string | null = ADMIN_TOKEN): Promise<AdminAnswer> {
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = text;
  }
  return { status: response.status, json, headers: response.headers };
}

export async function listTracks(baseUrl: string): Promise<{ default: string; artifacts: any[] }> {
  const { status, json } = await adminCall(baseUrl, 'GET', '/admin/artifacts');
  if (status !== 200) throw new Error(`GET /admin/artifacts answered ${status}: ${JSON.stringify(json)}`);
  return json;
}

export async function trackOf(baseUrl: string, key: string): Promise<any | undefined> {
  return (await listTracks(baseUrl)).artifacts.find((a) => a.artifact === key);
}

/** Polls until `check` holds (bounded); for effects that happen in the background. */
export async function eventually<T>(what: string, probe: () => Promise<T>, check: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (check(value)) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not reached within ${timeoutMs} ms (last: ${JSON.stringify(value)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
