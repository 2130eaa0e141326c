import type { ReportRecord } from '../../../messages/fleet.js';
import type { WebhookEvent } from '../../../shared/webhooks/events.js';

// The device events of webhooks. Both are recorded by the fleet actor, which sees the reports
// and keeps the enrollment state:
//   updater.device.update_failed — a report with success false (the flush records it);
//   updater.device.pending       — a device asked to enroll and waits for an operator: the
//                                  enrollment records it in the transaction that makes the device
//                                  pending (identity/identities.ts, OnNewPending), so once per enrollment.

export function updateFailedEvents(reports: readonly ReportRecord[]): WebhookEvent[] {
  return reports.filter((r) => !r.success).map((r) => ({
    type: 'updater.device.update_failed',
    data: { device_id: r.deviceId, previous_hash: r.previousHash, new_hash: r.newHash, rollback_reason: r.rollbackReason, timestamp: r.timestamp },
    atMs: r.receivedAtMs,
  }));
}

/** The key comes along so that the receiver (or the person it alerts) can check it against what the factory recorded. */
export function devicePendingEvent(deviceId: string, publicKey: string, atMs: number = Date.now()): WebhookEvent {
  return { type: 'updater.device.pending', data: { device_id: deviceId, public_key: publicKey }, atMs };
}
