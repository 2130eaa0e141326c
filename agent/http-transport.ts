import { UpdaterError, isUpdaterError } from '../src/shared/errors.js';
import type { HeartbeatWire, ReportWire } from '../src/shared/wire/keys.js';
import { transportError, type DownloadSink, type Transport } from './transport.js';

// The device protocol over HTTP with JSON bodies; downloads resume with a Range header.

/** A manifest is a few hundred bytes; a larger answer is refused before it is parsed. */
const MAX_MANIFEST_BYTES = 64 * 1024;
/** What of a refusal's body is read for its message. */
const MAX_REFUSAL_BYTES = 1024;

/**
 * The body as text, read only up to `limit` bytes: a longer body (a server or a man in the middle
 * can send gigabytes) is dropped unread, and `whole` is false. A failed read throws.
 */
async function readBounded(response: Response, limit: number): Promise<{ text: string; whole: boolean }> {
  if (!response.body) return { text: '', whole: true };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const next = await reader.read();
    if (next.done) return { text: Buffer.concat(chunks).toString('utf8'), whole: true };
    chunks.push(next.value);
    length += next.value.length;
    if (length > limit) {
      await reader.cancel().catch(() => undefined);
      return { text: Buffer.concat(chunks).subarray(0, limit).toString('utf8'), whole: false };
    }
  }
}

type Fetch = (url: string, init: RequestInit) => Promise<Response>;

/**
 * fetch with its own connection pool that accepts only server certificates chaining to `ca`
 * (instead of Node's built-in roots). undici is loaded on first use: it adds about half a
 * second to the agent's start, which a device without a CA file should not pay.
 */
function verifyingFetch(ca: string): { fetch: Fetch; close(): Promise<void> } {
  let loaded: Promise<{ agent: import('undici').Agent; fetch: typeof import('undici').fetch }> | undefined;
  const load = () => (loaded ??= import('undici').then(({ Agent, fetch }) => ({ agent: new Agent({ connect: { ca } }), fetch })));
  return {
    async fetch(url, init) {
      const { agent, fetch } = await load();
      return (await fetch(url, { ...(init as import('undici').RequestInit), dispatcher: agent })) as unknown as Response;
    },
    close: async () => {
      if (loaded) await (await loaded).agent.close();
    },
  };
}

export class HttpTransport implements Transport {
  readonly name = 'http' as const;
  /** The device token sent as `Authorization: Bearer` (enroll.ts sets it when the device has an identity). */
  token: string | undefined;
  private readonly client: { fetch: Fetch; close(): Promise<void> };

  /** With `caCertificates`, an https:// server must present a certificate that chains to them. */
  constructor(private readonly baseUrl: string, caCertificates?: string) {
    this.client = caCertificates ? verifyingFetch(caCertificates) : { fetch: (url, init) => fetch(url, init), close: async () => undefined };
  }

  private async request(path: string, init: RequestInit, what: string): Promise<Response> {
    try {
      const headers = this.token ? { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${this.token}` } : init.headers;
      return await this.client.fetch(`${this.baseUrl}${path}`, { ...init, ...(headers ? { headers } : {}) });
    } catch (err) {
      // An abort carrying our own reason (too slow, too large) is not a transport problem.
      if (isUpdaterError(init.signal?.reason)) throw init.signal!.reason;
      throw transportError('http', what, err);
    }
  }

  private async refuse(response: Response, what: string): Promise<never> {
    const { text } = await readBounded(response, MAX_REFUSAL_BYTES).catch(() => ({ text: '' }));
    const message = `http: ${what} answered ${response.status}: ${text.slice(0, 200)}`;
    // A server that cannot serve (5xx) is treated like an unreachable one: the other transport may work.
    if (response.status >= 500) throw new UpdaterError('AGENT_TRANSPORT_FAILED', message, { transport: 'http', status: response.status });
    throw new UpdaterError('AGENT_REQUEST_REFUSED', message, { status: response.status });
  }

  async heartbeat(body: HeartbeatWire, timeoutMs: number): Promise<unknown> {
    const signal = AbortSignal.timeout(timeoutMs);
    const response = await this.request('/heartbeat', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal,
    }, 'heartbeat');
    if (response.status !== 200) return this.refuse(response, 'heartbeat');
    let read: { text: string; whole: boolean };
    try {
      read = await readBounded(response, MAX_MANIFEST_BYTES);
    } catch (err) {
      throw transportError('http', 'heartbeat', err);
    }
    if (!read.whole) throw new UpdaterError('AGENT_MANIFEST_INVALID', `the manifest is longer than ${MAX_MANIFEST_BYTES} bytes`);
    const text = read.text;
    try {
      return JSON.parse(text);
    } catch {
      throw new UpdaterError('AGENT_MANIFEST_INVALID', 'the manifest is not valid JSON');
    }
  }

  /** POST /auth (devices.auth): the token (200) or the pending state (202). */
  async authenticate(request: Record<string, unknown>, timeoutMs: number): Promise<Record<string, unknown>> {
    const response = await this.request('/auth', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request), signal: AbortSignal.timeout(timeoutMs),
    }, 'auth');
    if (response.status !== 200 && response.status !== 202) return this.refuse(response, 'auth');
    let read: { text: string; whole: boolean };
    try {
      read = await readBounded(response, MAX_MANIFEST_BYTES);
    } catch (err) {
      throw transportError('http', 'auth', err);
    }
    if (!read.whole) throw new UpdaterError('AGENT_MANIFEST_INVALID', `the auth answer is longer than ${MAX_MANIFEST_BYTES} bytes`);
    try {
      return JSON.parse(read.text) as Record<string, unknown>;
    } catch (err) {
      throw transportError('http', 'auth', err);
    }
  }

  async keys(timeoutMs: number): Promise<unknown> {
    const response = await this.request('/keys', { signal: AbortSignal.timeout(timeoutMs) }, 'keys');
    if (response.status !== 200) return this.refuse(response, 'keys');
    const read = await readBounded(response, MAX_MANIFEST_BYTES).catch((err: unknown) => {
      throw transportError('http', 'keys', err);
    });
    if (!read.whole) throw new UpdaterError('AGENT_MANIFEST_INVALID', `GET /keys answered more than ${MAX_MANIFEST_BYTES} bytes`);
    try {
      return JSON.parse(read.text);
    } catch {
      throw new UpdaterError('AGENT_MANIFEST_INVALID', 'GET /keys did not answer JSON');
    }
  }

  async report(report: ReportWire, timeoutMs: number): Promise<void> {
    const response = await this.request('/report', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(report),
      signal: AbortSignal.timeout(timeoutMs),
    }, 'report');
    if (response.status !== 204 && response.status !== 200) await this.refuse(response, 'report');
    await readBounded(response, MAX_REFUSAL_BYTES).catch(() => undefined);
  }

  async download(endpoint: string, offset: number, expectedSize: number, sink: DownloadSink, signal: AbortSignal): Promise<void> {
    const headers: Record<string, string> = offset > 0 ? { range: `bytes=${offset}-` } : {};
    const response = await this.request(endpoint, { headers, signal }, `GET ${endpoint}`);
    if (response.status === 416 && offset > 0 && offset === expectedSize) {
      // Everything arrived before the link was cut; only the answer was lost.
      await readBounded(response, MAX_REFUSAL_BYTES).catch(() => undefined);
      await sink.begin(offset);
      return;
    }
    let start: number;
    if (response.status === 206) {
      const match = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(response.headers.get('content-range') ?? '');
      if (!match || Number(match[1]) !== offset) {
        await response.body?.cancel();
        throw new UpdaterError('AGENT_REQUEST_REFUSED', `http: GET ${endpoint} answered a range that was not asked for`);
      }
      start = offset;
    } else if (response.status === 200) {
      start = 0; // the server ignored the range: start over
    } else {
      return this.refuse(response, `GET ${endpoint}`);
    }
    await sink.begin(start);
    if (!response.body) return;
    const reader = response.body.getReader();
    let finished = false;
    try {
      for (;;) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (err) {
          if (isUpdaterError(signal.reason)) throw signal.reason;
          throw transportError('http', `GET ${endpoint}`, err);
        }
        if (next.done) {
          finished = true;
          return;
        }
        await sink.write(next.value);
      }
    } finally {
      // A sink that refused a chunk (too large, disk full) leaves the body unread: drop the connection.
      if (!finished) await reader.cancel().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
