import { createHmac, timingSafeEqual } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Test } from 'tap';
import type { Engine } from '../../src/shared/database/schema.js';
import { createTestDatabase, type TestDatabase } from './databases.js';
import { makeFixture, type Fixture } from './fixture.js';

// A webhook receiver on 127.0.0.1 that checks what a real one must: the signature over the
// exact body, with the shared secret, before it believes a byte of it.

export interface ReceivedEvent {
  id: string;
  type: string;
  source: string;
  specversion: string;
  time: string;
  data: any;
  /** Unix milliseconds when it arrived. */
  at: number;
}

export interface Receiver {
  readonly url: string;
  /** Events whose signature verified, in the order they were accepted (answered 2xx). */
  readonly accepted: ReceivedEvent[];
  /** Every request, signed right or not, with the answer it got. */
  readonly requests: { at: number; status: number; signatureValid: boolean; id?: string }[];
  /** Answer the next `n` requests with 500. */
  failNext(n: number): void;
  /** Answer every request with 503 (down) until set back. */
  down(on: boolean): void;
  /** Leave requests unanswered (a slow receiver) until set back; then they are handled in arrival order. */
  hold(on: boolean): void;
  /** Requests waiting under hold. */
  readonly held: () => number;
  close(): Promise<void>;
}

export function signatureOf(secret: string, body: Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export async function startReceiver(secret: string, port = 0): Promise<Receiver> {
  const accepted: ReceivedEvent[] = [];
  const requests: Receiver['requests'] = [];
  let failing = 0;
  let isDown = false;
  let holding = false;
  let parked: (() => void)[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => (holding ? parked.push(answer) : answer()));
    const answer = () => {
      const body = Buffer.concat(chunks);
      const given = Buffer.from(String(req.headers['x-updater-signature'] ?? ''));
      const wanted = Buffer.from(signatureOf(secret, body));
      const signatureValid = given.length === wanted.length && timingSafeEqual(given, wanted);
      let status = 204;
      let event: any;
      if (!signatureValid) status = 401;
      else if (isDown) status = 503;
      else if (failing > 0) {
        failing--;
        status = 500;
      } else {
        event = JSON.parse(body.toString('utf8'));
        accepted.push({ ...event, at: Date.now() });
      }
      requests.push({ at: Date.now(), status, signatureValid, ...(event ? { id: event.id } : {}) });
      res.writeHead(status).end();
    };
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}/hooks/updater`,
    accepted,
    requests,
    failNext: (n) => (failing = n),
    down: (on) => (isDown = on),
    hold(on) {
      holding = on;
      if (on) return;
      const waiting = parked;
      parked = [];
      for (const answer of waiting) answer();
    },
    held: () => parked.length,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

export interface WebhookFixture {
  fixture: Fixture;
  database: TestDatabase;
  receiver: Receiver;
  /** A file holding `secret`, for the configuration's `secret_file`. */
  secretFile: string;
}

/** A temp dir, a fresh database of `engine` and a receiver checking `secret`, all gone at teardown. */
export async function startWebhookFixture(t: Test, engine: Engine, prefix: string, secret: string): Promise<WebhookFixture> {
  const fixture = await makeFixture(prefix);
  const database = await createTestDatabase(engine, fixture.dir);
  const receiver = await startReceiver(secret);
  t.teardown(async () => {
    await receiver.close();
    await database.drop();
    await fixture.cleanup();
  });
  const secretFile = join(fixture.dir, 'webhook.secret');
  await writeFile(secretFile, `${secret}\n`);
  return { fixture, database, receiver, secretFile };
}
