// The admin API's view of webhook delivery, shared by the fleet actor (which answers it), the
// HTTP front-end and the console (which imports this file's types alone: it imports nothing).

/** `GET /admin/webhooks` (docs/operations.md, "Webhooks"). Times are Unix seconds. */
export interface WebhookState {
  webhooks: {
    url: string;
    events: string[];
    pending: number;
    delivered: number;
    /** Given up after 24 h of failed attempts. */
    failed: number;
    oldest_pending_at: number | null;
    last_delivered_at: number | null;
    /** When the queue's head, which failed before, is tried again; null when it has not failed. */
    next_attempt_at: number | null;
  }[];
  /** The newest events whose last attempt failed (still retrying, or given up), newest first. */
  failures: {
    webhook: string;
    event_id: string;
    type: string;
    state: string;
    at: number;
    attempts: number;
    next_attempt_at: number | null;
    last_status: number | null;
    last_error: string | null;
  }[];
}
