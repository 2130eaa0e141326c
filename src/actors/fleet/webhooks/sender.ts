import type { Kysely } from 'kysely';
import { ClusterLocks, LOCK_SPACE } from '../../../shared/database/cluster-lock.js';
import type { Database } from '../../../shared/database/schema.js';
import type { Config } from '../../../shared/config/types.js';
import type { Logger } from '../../../shared/logger.js';
import { nextAttemptAt, signature } from './delivery.js';
import * as q from './outbox.js';
import type { WebhookMetrics } from './metrics.js';

// Sends the outbox. Once a POLL_MS (and at once after an event is recorded here), a round
// walks each webhook's two queues (lanes) from their oldest pending rows: a due row is POSTed;
// a 2xx marks it delivered and the next one is sent; anything else schedules the row's next
// attempt, leaves the rest of its lane waiting behind it (in order per webhook and lane) and
// ends the webhook's round.
//
// In a cluster every replica runs this, but a round first takes the cluster-wide webhook lock
// (a PostgreSQL advisory lock) and a replica that does not get it skips the round: one sender
// at a time, and the next one reads what the last one committed. A row is marked only after
// its answer, so a sender killed in between sends it again: at least once.
//
// The two lanes of each webhook (outbox.ts) are each in order. The operator's lane goes first
// at the start of every round, right after an operator event is recorded on this replica, and
// every OPERATOR_CHECK_EVERY device rows (an event another replica recorded): an operator's
// publish waits for at most the device event on the wire, not for the device backlog. Looking
// at the operator's lane walks the pending device rows (the type is not indexed), so it is not
// done before every device row.

const POLL_MS = 1_000;
/** A receiver gets this long to answer. */
const ATTEMPT_TIMEOUT_MS = 10_000;
/** Rows sent per webhook per round, so that one long queue does not hold a round forever. */
const ROUND_ROWS = 200;
const ERROR_TEXT_MAX = 300;
/** Device rows sent between two looks at the operator's lane when nothing said one was recorded. */
const OPERATOR_CHECK_EVERY = 16;

type WebhookConfig = Config['webhooks'][number];

export class WebhookSender {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  /** Per webhook: an operator event was recorded here since its last look at the operator's lane. */
  private readonly operatorWaiting: boolean[];
  private readonly locks: ClusterLocks | undefined;

  constructor(
    private readonly db: () => Kysely<Database> | undefined,
    private readonly webhooks: readonly WebhookConfig[],
    clusterUrl: string | undefined,
    private readonly metrics: WebhookMetrics,
    private readonly log: Logger,
  ) {
    this.locks = clusterUrl === undefined ? undefined : new ClusterLocks(clusterUrl, 1);
    this.operatorWaiting = webhooks.map(() => false);
  }

  start(): void {
    if (this.webhooks.length === 0) return;
    this.timer = setInterval(() => this.kick(), POLL_MS);
    this.kick();
  }

  /** Runs a round now, or right after the one under way; `operator`: an operator event was just recorded. */
  kick(operator = false): void {
    if (this.stopped || this.webhooks.length === 0) return;
    if (operator) this.operatorWaiting.fill(true);
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.round()
      .catch((err) => this.log.warn({ err }, 'webhook round failed; the next one tries again'))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
    await this.locks?.close();
  }

  private async round(): Promise<void> {
    const db = this.db();
    if (!db) return;
    const release = this.locks ? await this.locks.tryLock(LOCK_SPACE.webhookSender, 'webhooks') : async () => undefined;
    if (!release) return; // another replica is the sender this round
    try {
      await Promise.all(this.webhooks.map((webhook, index) => this.drain(db, webhook, index)));
    } finally {
      await release();
    }
  }

  private async drain(db: Kysely<Database>, webhook: WebhookConfig, index: number): Promise<void> {
    let sinceLook = OPERATOR_CHECK_EVERY;
    for (let sent = 0; sent < ROUND_ROWS && !this.stopped; sent++) {
      let row: q.OutboxRow | undefined;
      if (this.operatorWaiting[index] || sinceLook >= OPERATOR_CHECK_EVERY) {
        this.operatorWaiting[index] = false;
        sinceLook = 0;
        row = due(await q.head(db, webhook.url, 'operator'));
      }
      if (!row) {
        row = due(await q.head(db, webhook.url, 'device'));
        sinceLook++;
      }
      if (!row) return;
      const answer = await post(webhook, row);
      const done = Date.now();
      if (answer.ok) {
        await q.delivered(db, row.id, answer.status!, done);
        this.metrics.attempt(index, 'delivered');
        continue;
      }
      const nextAt = nextAttemptAt(row.attempts + 1, row.created_at, done);
      await q.attemptFailed(db, row.id, { status: answer.status, error: answer.error }, nextAt, done);
      this.metrics.attempt(index, nextAt === undefined ? 'failed' : 'retry');
      const where = new URL(webhook.url).origin; // the path may hold a token (chat webhooks do)
      if (nextAt === undefined) {
        this.log.error({ webhook: where, event: row.event_id, type: row.type, attempts: row.attempts + 1, error: answer.error }, 'webhook event given up after 24 hours of failed attempts');
      } else {
        this.log.warn({ webhook: where, event: row.event_id, type: row.type, attempts: row.attempts + 1, error: answer.error, retry_in_ms: nextAt - done }, 'webhook delivery failed; retrying');
      }
      return;
    }
  }
}

/** A lane's head when its time has come; a head waiting for its retry holds its lane. */
function due(row: q.OutboxRow | undefined): q.OutboxRow | undefined {
  return row && row.next_at <= Date.now() ? row : undefined;
}

interface Answer {
  ok: boolean;
  status: number | null;
  error: string;
}

async function post(webhook: WebhookConfig, row: q.OutboxRow): Promise<Answer> {
  try {
    const response = await fetch(webhook.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/cloudevents+json; charset=utf-8',
        'X-Updater-Signature': signature(webhook.secret, row.body),
        'User-Agent': 'updater-webhooks',
      },
      body: row.body,
      // A redirect is an answer to look at, not to follow: the signature was meant for this URL.
      redirect: 'manual',
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
    });
    // Read (and drop) the body so the connection can be reused.
    await response.arrayBuffer().catch(() => undefined);
    if (response.status >= 200 && response.status < 300) return { ok: true, status: response.status, error: '' };
    return { ok: false, status: response.status, error: `answered ${response.status}` };
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const text = cause?.code ?? cause?.message ?? (err as Error).message;
    return { ok: false, status: null, error: String(text).slice(0, ERROR_TEXT_MAX) };
  }
}
