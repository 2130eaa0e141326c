import type pg from 'pg';
import type { Logger } from '../logger.js';

// One dedicated PostgreSQL connection that LISTENs (a pooled connection cannot: LISTEN belongs
// to a session). It reconnects by itself, and pings the server so that a database that went
// away without closing the socket (a cut network) is noticed within a few seconds, not at the
// kernel's TCP timeout.
//
//   connect ─▶ LISTEN channels ─▶ up() ─▶ notify(channel, payload)…
//      ▲                                   │ error / end / ping timeout
//      └──────── retryMs ◀── down(err) ◀───┘

export interface ListenerHandlers {
  notify(channel: string, payload: string): void;
  /** Connected and listening (again): whatever was missed meanwhile must be read afresh. */
  up(): void;
  down(err: unknown): void;
}

const PING_MS = 2_000;
const PING_TIMEOUT_MS = 3_000;
const CONNECT_TIMEOUT_MS = 3_000;

export class PgListener {
  private client: pg.Client | undefined;
  private retry: NodeJS.Timeout | undefined;
  private ping: NodeJS.Timeout | undefined;
  private closed = false;
  private connected = false;

  constructor(
    private readonly url: string,
    private readonly channels: readonly string[],
    private readonly handlers: ListenerHandlers,
    private readonly log: Logger,
    private readonly retryMs = 1_000,
  ) {}

  get isUp(): boolean {
    return this.connected;
  }

  start(): void {
    void this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    clearInterval(this.ping);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    // Loaded on the first connection, not at the top: see ClusterLocks (cluster-lock.ts).
    const { default: pg } = await import('pg');
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true });
    this.client = client;
    client.on('notification', (msg) => this.handlers.notify(msg.channel, msg.payload ?? ''));
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('the database closed the connection')));
    try {
      await client.connect();
      for (const channel of this.channels) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      this.lost(client, err);
      return;
    }
    if (this.client !== client) return;
    this.connected = true;
    this.ping = setInterval(() => this.checkAlive(client), PING_MS);
    this.handlers.up();
  }

  private checkAlive(client: pg.Client): void {
    const timer = setTimeout(() => this.lost(client, new Error(`the database did not answer a ping within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS);
    client.query('select 1').then(() => clearTimeout(timer), (err) => {
      clearTimeout(timer);
      this.lost(client, err);
    });
  }

  /** Drops a connection once, however many of its events report the loss, and tries again later. */
  private lost(client: pg.Client, err: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    clearInterval(this.ping);
    const wasUp = this.connected;
    this.connected = false;
    client.removeAllListeners('notification');
    client.on('error', () => undefined);
    // end() waits for a socket that may never answer; a cut connection is destroyed instead.
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    if (wasUp) this.log.warn({ err }, 'lost the database listener connection; reconnecting');
    this.handlers.down(err);
    if (!this.closed) this.retry = setTimeout(() => void this.connect(), this.retryMs);
  }
}
