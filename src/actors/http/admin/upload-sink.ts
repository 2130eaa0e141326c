import { createHash } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { writeFully } from '../../../shared/durable-file.js';

// The disk side of an upload: chunks from uWS go into a queue that one loop writes to the
// temporary in order, coalesced into writes of up to WRITE_BYTES. The queue is what memory an
// upload holds: past HIGH_WATER the socket is paused (uWS stops reading it, TCP's window
// closes, the client waits) and below LOW_WATER it reads again. A 2 GB body therefore costs
// about HIGH_WATER plus one write buffer, whatever the client's speed and the disk's.

/** Bytes queued for the disk before the socket is paused. */
export const HIGH_WATER = 8 * 1024 * 1024;
const LOW_WATER = 2 * 1024 * 1024;
const WRITE_BYTES = 1024 * 1024;

const CANCELLED = new Error('upload cancelled');

export interface Flow {
  pause(): void;
  resume(): void;
}

export class UploadSink {
  private readonly hasher = createHash('sha256');
  private readonly queue: Buffer[] = [];
  private queued = 0;
  private received = 0;
  private ended = false;
  private paused = false;
  private failure: unknown;
  private wakeWriter: (() => void) | undefined;
  private readonly writing: Promise<void>;

  private constructor(private readonly handle: FileHandle, private readonly flow: Flow, onError: (err: unknown) => void) {
    this.writing = this.writeLoop();
    // A write that fails (a full disk) is told at once: the client may still be sending, and
    // may be paused, waiting for an answer that only this can give.
    this.writing.catch((err) => {
      if (err !== CANCELLED) onError(err);
    });
  }

  /** `onError` hears of a failed write as soon as it happens. */
  static async open(path: string, flow: Flow, onError: (err: unknown) => void): Promise<UploadSink> {
    return new UploadSink(await open(path, 'r+'), flow, onError);
  }

  get size(): number {
    return this.received;
  }

  /** Takes a chunk uWS will reuse once the callback returns: hashed now, copied for the queue. */
  push(view: Uint8Array): void {
    if (this.ended || this.failure !== undefined) return;
    this.hasher.update(view);
    this.received += view.byteLength;
    this.queue.push(Buffer.from(view));
    this.queued += view.byteLength;
    if (!this.paused && this.queued > HIGH_WATER) {
      this.paused = true;
      this.flow.pause();
    }
    this.wakeWriter?.();
  }

  /** The last chunk is in: resolves with hash and size once every byte is written and synced. */
  async finish(): Promise<{ hash: string; size: number }> {
    this.ended = true;
    this.wakeWriter?.();
    try {
      await this.writing;
      await this.handle.sync();
    } finally {
      await this.handle.close();
    }
    return { hash: this.hasher.digest('hex'), size: this.received };
  }

  /** Stops writing (client gone, too large, refused); the caller has the temporary removed. */
  async cancel(): Promise<void> {
    this.failure ??= CANCELLED;
    this.queue.length = 0;
    this.queued = 0;
    this.wakeWriter?.();
    await this.writing.catch(() => undefined);
    await this.handle.close().catch(() => undefined);
  }

  private async writeLoop(): Promise<void> {
    const buffer = Buffer.allocUnsafe(WRITE_BYTES);
    for (;;) {
      if (this.failure !== undefined) throw this.failure;
      if (this.queue.length === 0) {
        if (this.ended) return;
        await new Promise<void>((resolve) => (this.wakeWriter = resolve));
        this.wakeWriter = undefined;
        continue;
      }
      let filled = 0;
      while (this.queue.length > 0 && filled < WRITE_BYTES) {
        const head = this.queue[0]!;
        const take = Math.min(head.length, WRITE_BYTES - filled);
        head.copy(buffer, filled, 0, take);
        filled += take;
        if (take === head.length) this.queue.shift();
        else this.queue[0] = head.subarray(take);
      }
      try {
        await writeFully(this.handle, buffer.subarray(0, filled));
      } catch (err) {
        this.failure = err;
        throw err;
      }
      this.queued -= filled;
      if (this.paused && this.queued < LOW_WATER && this.failure === undefined) {
        this.paused = false;
        this.flow.resume();
      }
    }
  }
}
