import type { Kysely } from 'kysely';
import type { Registry } from 'prom-client';
import type { WebhookState } from '../../../messages/webhooks.js';
import type { Config } from '../../../shared/config/types.js';
import type { Database } from '../../../shared/database/schema.js';
import type { Logger } from '../../../shared/logger.js';
import type { WebhookEvent } from '../../../shared/webhooks/events.js';
import { cloudEvent } from './delivery.js';
import { createWebhookMetrics, type WebhookMetrics } from './metrics.js';
import * as q from './outbox.js';
import { WebhookSender } from './sender.js';

// The fleet actor's webhooks (docs/operations.md, "Webhooks"): events go into the outbox table
// of the database this actor owns, in the same order they are recorded, and the sender
// delivers them from there.
//
//   manifester ──recordEvents──▶ ┐
//   fleet (failed reports,       ├─▶ record ─▶ outbox rows (one per subscribed webhook) ─▶ sender ─▶ POST
//          pending devices) ─────┘

/** Delivered and given-up rows are kept this long for the console, then pruned by fleet retention. */
const KEEP_DONE_MS = 7 * 24 * 60 * 60_000;
const RECENT_FAILURES = 20;

export class Webhooks {
  private readonly metrics: WebhookMetrics;
  private readonly sender: WebhookSender;

  constructor(private readonly config: Config, private readonly db: () => Kysely<Database> | undefined, registry: Registry, log: Logger) {
    this.metrics = createWebhookMetrics(registry, config.webhooks.map((w) => w.url));
    const cluster = config.cluster ? config.database : undefined;
    this.sender = new WebhookSender(db, config.webhooks, cluster, this.metrics, log);
  }

  start(): void {
    this.sender.start();
  }

  stop(): Promise<void> {
    return this.sender.stop();
  }

  /**
   * Puts events in the outbox for every webhook that subscribed to their type; durable when
   * it resolves. Rejects (and records nothing) when the database cannot be written. `into` is a
   * caller's transaction the rows join (durable at its commit; the sender's next round after
   * that, at the latest its next poll, sends them).
   */
  async record(events: readonly WebhookEvent[], into?: Kysely<Database>): Promise<void> {
    const rows: q.NewOutboxRow[] = [];
    for (const event of events) {
      const targets = this.config.webhooks.filter((w) => w.events.includes(event.type));
      if (targets.length === 0) continue;
      // One id per event: a receiver subscribed twice (two URLs) sees the same id in both.
      const { id, body } = cloudEvent(event);
      for (const webhook of targets) rows.push({ webhook: webhook.url, event_id: id, type: event.type, body, created_at: event.atMs });
    }
    if (rows.length === 0) return;
    const db = into ?? this.db();
    if (!db) throw new Error('the fleet database is not open');
    await q.enqueue(db, rows);
    this.sender.kick(rows.some((r) => q.laneOf(r.type) === 'operator'));
  }

  /** `GET /admin/webhooks`: each configured webhook's queue and the latest failed attempts. */
  async state(): Promise<WebhookState> {
    const db = this.db();
    if (!db) throw new Error('the fleet database is not open');
    const now = Date.now();
    const counts = await q.counts(db);
    this.metrics.setQueues(counts, now);
    const failures = await q.recentFailures(db, RECENT_FAILURES);
    const seconds = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : Math.floor(ms / 1000));
    const webhooks = await Promise.all(this.config.webhooks.map(async (w) => {
      const of = (state: string) => counts.find((c) => c.webhook === w.url && c.state === state);
      const head = await q.head(db, w.url);
      return {
        url: w.url,
        events: [...w.events],
        pending: of('pending')?.events ?? 0,
        delivered: of('delivered')?.events ?? 0,
        failed: of('failed')?.events ?? 0,
        oldest_pending_at: seconds(of('pending')?.oldest),
        last_delivered_at: seconds(of('delivered')?.latest),
        next_attempt_at: head && head.attempts > 0 ? seconds(head.next_at) : null,
      };
    }));
    return {
      webhooks,
      failures: failures.filter((f) => this.config.webhooks.some((w) => w.url === f.webhook)).map((f) => ({
        webhook: f.webhook, event_id: f.event_id, type: f.type, state: f.state, at: seconds(f.created_at)!,
        attempts: f.attempts, next_attempt_at: f.state === 'pending' ? seconds(f.next_at) : null, last_status: f.last_status, last_error: f.last_error,
      })),
    };
  }

  /** Refreshes the queue gauges (a scan of the outbox: on a timer, not per scrape). */
  async refreshMetrics(): Promise<void> {
    const db = this.db();
    if (db && this.config.webhooks.length > 0) this.metrics.setQueues(await q.counts(db), Date.now());
  }

  async prune(nowMs: number): Promise<number> {
    const db = this.db();
    return db ? q.prune(db, nowMs - KEEP_DONE_MS) : 0;
  }
}
