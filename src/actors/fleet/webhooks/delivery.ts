import { createHmac, randomUUID } from 'node:crypto';
import type { WebhookEvent } from '../../../shared/webhooks/events.js';

// What a webhook receives and when (docs/operations.md, "Webhooks"). Pure: the CloudEvent's
// bytes, their signature, and the retry schedule.

/** CloudEvents `source`: the same on every replica, so a cluster reads as one sender. */
export const EVENT_SOURCE = '/updater';
/** The first retry comes this long after the first failure; each later one waits twice as long. */
export const FIRST_RETRY_MS = 5_000;
export const MAX_RETRY_MS = 10 * 60_000;
/** An event still undelivered this long after it happened is given up (state `failed`). */
export const GIVE_UP_AFTER_MS = 24 * 60 * 60_000;

/** The CloudEvents 1.0 structured-mode JSON of an event, serialized once, with its id. */
export function cloudEvent(event: WebhookEvent, id: string = randomUUID()): { id: string; body: string } {
  const body = JSON.stringify({
    specversion: '1.0',
    id,
    source: EVENT_SOURCE,
    type: event.type,
    time: new Date(event.atMs).toISOString(),
    datacontenttype: 'application/json',
    data: event.data,
  });
  return { id, body };
}

/** `X-Updater-Signature`: the hex HMAC-SHA256 of the exact body bytes with the webhook's secret. */
export function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

/**
 * After a failed attempt: when to try again, or undefined to give up. `attempts` counts the
 * attempts made so far (1 after the first failure).
 */
export function nextAttemptAt(attempts: number, createdAtMs: number, nowMs: number): number | undefined {
  if (nowMs - createdAtMs >= GIVE_UP_AFTER_MS) return undefined;
  const delay = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1));
  return nowMs + delay;
}
