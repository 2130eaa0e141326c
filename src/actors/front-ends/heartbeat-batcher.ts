import type { AnswerEncoding, EncodedAnswer, HeartbeatAnswers, HeartbeatBatch, HeartbeatRequest } from '../../messages/manifester.js';
import { deserializeError } from '../../shared/errors.js';
import type { ActorContext } from '../runtime.js';

// Heartbeats that arrive together travel to the manifester together, one message per batch
// rather than one per heartbeat, and at most one batch is out at a time: the heartbeats that
// arrive while it is out wait for its answer and then go together in the next one. Under load
// the batches grow by themselves (a profile of the HTTP front-end at 100,000 device ids spent
// 13 us a heartbeat in postMessage when every event-loop turn sent its own batch, most of them
// small, since on a busy machine the answers come back a few at a time); when idle a lone
// heartbeat goes at once (on the next turn of the loop, setImmediate) and waits for nothing.

/** Bounds one message; more queued heartbeats go in the next. */
const MAX_BATCH = 256;

type Ask<T> = (batch: HeartbeatBatch) => Promise<HeartbeatAnswers<T>>;

interface Waiting<T> {
  readonly request: HeartbeatRequest;
  resolve(answer: T): void;
  reject(err: unknown): void;
}

/**
 * A heartbeat's delta_formats as HeartbeatBatch.formats carries them, joined by commas. A name
 * with a comma in it is no format the server offers, so it is skipped here as chooseFormat
 * would skip it: split again by the manifester, it would become names that may be offered.
 */
function formatsText(names: readonly string[]): string {
  let text = '';
  for (const name of names) {
    if (name.includes(',')) continue;
    text = text === '' ? name : `${text},${name}`;
  }
  return text;
}

/** `T` is the answer body the front-end asked for: JSON text (HTTP) or CBOR bytes (CoAP). */
export class HeartbeatBatcher<T> {
  private queue: Waiting<T>[] = [];
  private scheduled = false;
  private out = false;

  constructor(private readonly ask: Ask<T>) {}

  heartbeat(request: HeartbeatRequest): Promise<T> {
    return new Promise((resolve, reject) => {
      this.queue.push({ request, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.out || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => this.send());
  }

  private send(): void {
    this.scheduled = false;
    const batch = this.queue.length <= MAX_BATCH ? this.queue : this.queue.slice(0, MAX_BATCH);
    this.queue = batch === this.queue ? [] : this.queue.slice(MAX_BATCH);
    const n = batch.length;
    const deviceIds = new Array<string>(n);
    const versionHashes = new Array<string>(n);
    const artifacts = new Array<string>(n);
    let formats: string[] | undefined;
    let routes: string[] | undefined;
    for (let i = 0; i < n; i++) {
      const r = batch[i]!.request;
      deviceIds[i] = r.deviceId;
      versionHashes[i] = r.versionHash;
      artifacts[i] = r.artifact;
      // Sent only when some heartbeat of the batch named formats: the batches of old devices stay as they were.
      if (r.deltaFormats) (formats ??= new Array<string>(n).fill(''))[i] = formatsText(r.deltaFormats);
      if (r.route) (routes ??= new Array<string>(n).fill(''))[i] = r.route;
    }
    this.out = true;
    let asked: Promise<HeartbeatAnswers<T>>;
    try {
      asked = this.ask({ deviceIds, versionHashes, artifacts, ...(formats ? { formats } : {}), ...(routes ? { routes } : {}) });
    } catch (err) {
      asked = Promise.reject(err);
    }
    asked.then(
      (answers) => {
        const failed = new Map(answers.errors.map(({ at, error }) => [at, error]));
        for (let i = 0; i < n; i++) {
          const error = failed.get(i);
          const body = answers.bodies[i];
          if (error) batch[i]!.reject(deserializeError(error));
          else if (body !== null && body !== undefined) batch[i]!.resolve(body);
          else batch[i]!.reject(new Error('the manifester answered fewer heartbeats than asked'));
        }
      },
      (err) => batch.forEach((w) => w.reject(err)),
    ).finally(() => {
      this.out = false;
      this.schedule();
    });
  }
}

/** A front-end's batcher: its heartbeats to the manifester, answered in `encoding`. */
export function manifesterBatcher<E extends AnswerEncoding>(ctx: ActorContext, encoding: E): HeartbeatBatcher<EncodedAnswer[E]> {
  // The manifester answers in the encoding asked for (ManifesterApi.heartbeats); the typed peer
  // proxy loses the method's type parameter, so the answer type is restated here, once.
  return new HeartbeatBatcher((batch) => ctx.call('manifester', (m) => m.heartbeats(batch, encoding)) as Promise<HeartbeatAnswers<EncodedAnswer[E]>>);
}
