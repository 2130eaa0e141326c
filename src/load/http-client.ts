import { createHash } from 'node:crypto';
import { Agent, request } from 'node:http';
import type { Manifest } from '../messages/manifester.js';

// The harness's HTTP client: node:http over keep-alive agents, so thousands of simulated
// devices share a bounded number of sockets, as devices behind one gateway would. Downloads
// have sockets of their own: on one shared pool a heartbeat waited in the harness for a socket
// a download held, and that wait was counted as the server's latency (the soak's HTTP p99 of
// seconds). How long a request waited for a socket is reported apart (`queuedMs`). With
// device auth (--device-auth) each request carries its device's token as `Authorization:
// Bearer`, and POST /auth goes over the heartbeats' sockets.

export interface HeartbeatAnswer {
  readonly status: number;
  readonly manifest?: Manifest;
  readonly bytesUp: number;
  readonly bytesDown: number;
  /** Time the request waited in the harness for a free socket, ms (not the server's). */
  readonly queuedMs: number;
}

/** What POST /auth answered, on either transport (status mapped to HTTP's for CoAP). */
export interface AuthAnswer {
  readonly status: number;
  /** 200: the token; 202 (CoAP: 2.05 with a state): pending. */
  readonly token?: string;
  readonly pending?: boolean;
}

/** A harness socket idle this long is closed (see the constructor). */
const IDLE_SOCKET_MS = 5_000;

const bearer = (token: string | undefined): Record<string, string> => (token === undefined ? {} : { authorization: `Bearer ${token}` });

export class HttpLoadClient {
  private readonly agent: Agent;
  private readonly downloads: Agent;
  private readonly host: string;
  private readonly port: number;

  constructor(baseUrl: string, sockets: number, idleMs = IDLE_SOCKET_MS) {
    const url = new URL(baseUrl);
    if (url.protocol !== 'http:') throw new Error(`--url must be an http:// address (got ${baseUrl})`);
    this.host = url.hostname;
    this.port = Number(url.port || 80);
    // An idle socket is closed after idleMs (the agent's `timeout` ends a free socket; a request
    // in flight has its own deadline below). It must be the harness that closes it, before the
    // server does: uWS ends a connection idle for 10 s without a word, and a request sent on it
    // as it goes is answered ECONNRESET, which the report would count as the server's error.
    // The same reason as the 5 s keepalive_timeout of the nginx example (docs/operations.md).
    this.agent = new Agent({ keepAlive: true, maxSockets: sockets, timeout: idleMs });
    this.downloads = new Agent({ keepAlive: true, maxSockets: sockets, timeout: idleMs });
  }

  heartbeat(body: string, token?: string): Promise<HeartbeatAnswer> {
    return new Promise((resolve, reject) => {
      const asked = performance.now();
      let queuedMs = 0;
      const req = request({
        host: this.host, port: this.port, method: 'POST', path: '/heartbeat', agent: this.agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...bearer(token) },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks);
          let manifest: Manifest | undefined;
          if (res.statusCode === 200) {
            try {
              manifest = JSON.parse(text.toString()) as Manifest;
            } catch {
              reject(new Error('malformed manifest'));
              return;
            }
          }
          resolve({ status: res.statusCode ?? 0, manifest, bytesUp: body.length, bytesDown: text.length, queuedMs });
        });
        res.on('error', reject);
      });
      req.once('socket', () => {
        queuedMs = performance.now() - asked;
      });
      req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
      req.on('error', reject);
      req.end(body);
    });
  }

  /** Sends an update report; resolves with the status (204 expected). */
  report(body: string, token?: string): Promise<number> {
    return this.post('/report', body, token).then((answer) => answer.status);
  }

  /** POST /auth with a signed request (JSON); the token, or pending (202). */
  async authenticate(fields: Record<string, unknown>): Promise<AuthAnswer> {
    const { status, text } = await this.post('/auth', JSON.stringify(fields));
    if (status === 202) return { status, pending: true };
    if (status !== 200) return { status };
    let token: unknown;
    try {
      token = (JSON.parse(text) as { token?: unknown }).token;
    } catch {
      throw new Error('malformed auth answer');
    }
    if (typeof token !== 'string' || token.length === 0) throw new Error('malformed auth answer');
    return { status, token };
  }

  private post(path: string, body: string, token?: string): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const req = request({
        host: this.host, port: this.port, method: 'POST', path, agent: this.agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...bearer(token) },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      });
      req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
      req.on('error', reject);
      req.end(body);
    });
  }

  /** Downloads a transfer and returns its size and SHA-256. */
  download(path: string, deadlineMs: number, token?: string): Promise<{ status: number; size: number; hash: string }> {
    return new Promise((resolve, reject) => {
      const req = request({ host: this.host, port: this.port, method: 'GET', path, agent: this.downloads, headers: bearer(token) }, (res) => {
        const hasher = createHash('sha256');
        let size = 0;
        res.on('data', (c: Buffer) => {
          hasher.update(c);
          size += c.length;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, size, hash: hasher.digest('hex') }));
        res.on('error', reject);
      });
      req.setTimeout(deadlineMs, () => req.destroy(new Error('timeout')));
      req.on('error', reject);
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
    this.downloads.destroy();
  }
}
