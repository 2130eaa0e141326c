import { Counter, Gauge, type Registry } from 'prom-client';
import type { QueueCounts } from './outbox.js';

// Webhook delivery in /metrics (docs/metrics.md). Webhooks are labelled by their position in
// `webhooks` (0, 1, …), never by URL: a chat webhook's URL carries its token.

export type AttemptResult = 'delivered' | 'retry' | 'failed';

export interface WebhookMetrics {
  attempt(webhook: number, result: AttemptResult): void;
  setQueues(counts: readonly QueueCounts[], nowMs: number): void;
}

export function createWebhookMetrics(registry: Registry, urls: readonly string[]): WebhookMetrics {
  const attempts = new Counter({
    name: 'updater_webhook_attempts_total', help: 'Webhook delivery attempts by webhook and result: delivered (2xx), retry (failed, tried again later), failed (given up after 24 h)',
    labelNames: ['webhook', 'result'], registers: [registry],
  });
  const pending = new Gauge({ name: 'updater_webhook_pending_events', help: 'Events in the outbox waiting for delivery, by webhook', labelNames: ['webhook'], registers: [registry] });
  const oldest = new Gauge({
    name: 'updater_webhook_oldest_pending_seconds', help: 'Age of the oldest event waiting for delivery, by webhook (0 when none waits)', labelNames: ['webhook'], registers: [registry],
  });
  for (const [i] of urls.entries()) {
    for (const result of ['delivered', 'retry', 'failed']) attempts.inc({ webhook: String(i), result }, 0);
    pending.set({ webhook: String(i) }, 0);
    oldest.set({ webhook: String(i) }, 0);
  }
  return {
    attempt(webhook, result) {
      attempts.inc({ webhook: String(webhook), result });
    },
    setQueues(counts, nowMs) {
      for (const [i, url] of urls.entries()) {
        const row = counts.find((c) => c.webhook === url && c.state === 'pending');
        pending.set({ webhook: String(i) }, row?.events ?? 0);
        oldest.set({ webhook: String(i) }, row?.oldest ? Math.max(0, (nowMs - row.oldest) / 1000) : 0);
      }
    },
  };
}
