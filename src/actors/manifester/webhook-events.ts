import type { WebhookEvent } from '../../shared/webhooks/events.js';
import type { ActorContext } from '../runtime.js';

// How an actor other than the fleet hands webhook events to the outbox (the fleet actor owns
// the database; src/actors/fleet/webhooks/). Events no webhook subscribed to stop here. The
// rest wait in a queue, in order, and go to the fleet actor in batches; a batch it could not
// take (restarting, database down) is sent again, first after RETRY_MS, then less often, so an
// outage of the fleet actor delays events without losing them while this thread lives.

const RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;
const BATCH = 100;
/** Past this many waiting events the oldest are dropped (and logged): memory stays bounded. */
const MAX_QUEUED = 10_000;

export interface WebhookEmitter {
  emit(event: WebhookEvent): void;
}

export function webhookEmitter(ctx: ActorContext): WebhookEmitter {
  const wanted = new Set(ctx.config.webhooks.flatMap((w) => w.events));
  const queue: WebhookEvent[] = [];
  let sending = false;
  let delay = RETRY_MS;

  const send = async () => {
    sending = true;
    while (queue.length > 0) {
      const batch = queue.slice(0, BATCH);
      try {
        await ctx.call('fleet', (f) => f.recordEvents(batch));
        queue.splice(0, batch.length);
        delay = RETRY_MS;
      } catch (err) {
        ctx.log.warn({ err, waiting: queue.length, retry_in_ms: delay }, 'cannot hand webhook events to the fleet actor; retrying');
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(MAX_RETRY_MS, delay * 2);
      }
    }
    sending = false;
  };

  return {
    emit(event) {
      if (!wanted.has(event.type)) return;
      queue.push(event);
      if (queue.length > MAX_QUEUED) {
        const dropped = queue.splice(0, queue.length - MAX_QUEUED);
        ctx.log.error({ dropped: dropped.length, first: dropped[0]!.type }, 'webhook events dropped: the fleet actor has not taken them for too long');
      }
      if (!sending) void send();
    },
  };
}
