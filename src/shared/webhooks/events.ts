// The webhook event types an operator subscribes to (docs/operations.md, "Webhooks"). The
// configuration checks `webhooks[].events` against this list; the actors that see each change
// emit it (manifester: tracks and rollouts; fleet: devices).

export const WEBHOOK_EVENT_TYPES = [
  'updater.track.published',
  'updater.track.removed',
  'updater.rollout.started',
  'updater.rollout.scheduled',
  'updater.rollout.step',
  'updater.rollout.paused',
  'updater.rollout.resumed',
  'updater.rollout.completed',
  'updater.rollout.aborted',
  'updater.device.pending',
  'updater.device.update_failed',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export function isWebhookEventType(value: unknown): value is WebhookEventType {
  return (WEBHOOK_EVENT_TYPES as readonly unknown[]).includes(value);
}

/**
 * One event as an actor hands it to the outbox: the CloudEvents `type`, its `data` (what the
 * event is about: `artifact` and more for a track or rollout, `device_id` for a device) and
 * when it happened (Unix milliseconds).
 */
export interface WebhookEvent {
  readonly type: WebhookEventType;
  readonly data: Readonly<Record<string, unknown>>;
  readonly atMs: number;
}
