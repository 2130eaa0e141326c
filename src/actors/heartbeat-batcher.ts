import type { HeartbeatOutcome, HeartbeatRequest } from '../messages/manifester.js';
import { deserializeError } from '../shared/errors.js';

// Heartbeats that arrive together travel to the manifester together. The datagrams read in
// one poll phase of the event loop are queued, and one message carries them once the phase
// is over (setImmediate): under load that is tens of heartbeats per cross-thread message
// instead of one each, and when idle a lone heartbeat waits for nothing.

/** Bounds one message; a larger burst goes as several. */
const MAX_BATCH = 256;

type Ask<T> = (requests: HeartbeatRequest[]) => Promise<HeartbeatOutcome<T>[]>;

interface Waiting<T> {
  request: HeartbeatRequest;
  resolve(answer: T): void;
  reject(err: unknown): void;
}

/** `T` is what the manifester answers per heartbeat: a Manifest (CoAP) or its JSON text (HTTP). */
export class HeartbeatBatcher<T> {
  private queue: Waiting<T>[] = [];
  private scheduled = false;

  constructor(private readonly ask: Ask<T>) {}

  heartbeat(request: HeartbeatRequest): Promise<T> {
    return new Promise((resolve, reject) => {
      this.queue.push({ request, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const pending = this.queue;
    this.queue = [];
    for (let start = 0; start < pending.length; start += MAX_BATCH) {
      const batch = pending.slice(start, start + MAX_BATCH);
      this.ask(batch.map((w) => w.request)).then(
        (outcomes) => batch.forEach((w, i) => {
          const outcome = outcomes[i];
          if (outcome && 'value' in outcome) w.resolve(outcome.value);
          else w.reject(outcome ? deserializeError(outcome.error) : new Error('the manifester answered fewer heartbeats than asked'));
        }),
        (err) => batch.forEach((w) => w.reject(err)),
      );
    }
  }
}
