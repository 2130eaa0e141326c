import { open, type FileHandle } from 'node:fs/promises';
import type { TransferLocation } from '../../../messages/store.js';
import type { TransferLocator } from '../../front-ends/transfer-locator.js';
import { transferETag } from './conditional.js';
import { statusLine, type Exchange } from '../server/respond.js';

const CHUNK_BYTES = 64 * 1024;

export interface StreamOptions {
  status: number;
  headers: Record<string, string>;
  /** HEAD: the same headers and Content-Length, no body. */
  headOnly?: boolean;
}

/**
 * Streams `length` bytes of a transfer starting at `start`, from the hot cache's shared
 * memory or from the immutable file, pausing whenever the socket's buffer is full
 * (uWS backpressure: tryEnd reports not ok, onWritable says when to go on).
 *
 * Once the status line is out, a failure can no longer be answered: the connection is closed
 * (the device resumes with Range) and the error rethrown for the log.
 */
export async function streamTransfer(ex: Exchange, location: TransferLocation, start: number, length: number, options: StreamOptions,
  locator: TransferLocator): Promise<void> {
  const { res } = ex;
  let file: FileHandle | undefined;
  const shared = location.shared ? new Uint8Array(location.shared) : undefined;
  if (!shared && !options.headOnly) {
    try {
      file = await open(location.path, 'r');
    } catch (err) {
      // Removed by retention since it was located: the transfer is gone.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw locator.gone(location);
      throw err;
    }
  }
  let headersSent = false;
  try {
    if (ex.aborted) return;
    ex.status = options.status;
    headersSent = true;
    res.cork(() => {
      res.writeStatus(statusLine(options.status));
      res.writeHeader('Content-Type', 'application/zstd');
      res.writeHeader('Accept-Ranges', 'bytes');
      res.writeHeader('ETag', transferETag(location.hash));
      for (const [name, value] of Object.entries(options.headers)) res.writeHeader(name, value);
      if (options.headOnly || length === 0) res.endWithoutBody(length);
    });
    if (options.headOnly || length === 0) {
      ex.done = true;
      return;
    }
    const pump = new Pump(ex, length);
    let sent = 0;
    const buffer = shared ? undefined : Buffer.allocUnsafe(CHUNK_BYTES);
    while (sent < length && !ex.aborted && !ex.done) {
      const want = Math.min(CHUNK_BYTES, length - sent);
      let chunk: Uint8Array;
      if (shared) {
        chunk = shared.subarray(start + sent, start + sent + want);
      } else {
        const { bytesRead } = await file!.read(buffer!, 0, want, start + sent);
        if (bytesRead === 0) throw new Error(`${location.path} ended early`);
        chunk = buffer!.subarray(0, bytesRead);
      }
      if (ex.aborted) return;
      await pump.write(chunk);
      sent += chunk.byteLength;
    }
  } catch (err) {
    if (headersSent && !ex.aborted && !ex.done) {
      // Never a second status line inside the body: the client sees a short body and a closed
      // connection, which a resuming client handles.
      ex.done = true;
      res.close();
    }
    throw err;
  } finally {
    await file?.close();
  }
}

/**
 * Writes chunks with tryEnd. One onWritable handler lives for the whole response: registering
 * a new handler per stalled chunk lost wake-ups in uWS (uWebSockets.js issue 961, a download
 * hanging mid-body forever), so the handler reads the pending chunk from here instead.
 */
class Pump {
  private pending?: { chunk: Uint8Array; base: number; resolve: () => void };

  constructor(private readonly ex: Exchange, private readonly total: number) {
    ex.res.onWritable((offset) => this.drain(offset));
  }

  /** Resolves once uWS has taken the whole chunk (or the client has gone). */
  write(chunk: Uint8Array): Promise<void> {
    const { ex } = this;
    const base = ex.res.getWriteOffset();
    const [ok, done] = this.tryEnd(chunk);
    if (done) ex.done = true;
    if (ok || done) return Promise.resolve();
    return new Promise((resolve) => {
      this.pending = { chunk, base, resolve };
      ex.wake = () => this.settle();
    });
  }

  private drain(offset: number): boolean {
    const pending = this.pending;
    if (!pending) return true;
    if (this.ex.aborted) {
      this.settle();
      return true;
    }
    const [ok, done] = this.tryEnd(pending.chunk.subarray(offset - pending.base));
    if (done) this.ex.done = true;
    if (ok || done) this.settle();
    return ok || done;
  }

  /**
   * Goes on in a later event-loop turn, outside uWS's writable callback: the next tryEnd then
   * runs on a socket whose writable event has finished.
   */
  private settle(): void {
    const pending = this.pending;
    this.pending = undefined;
    this.ex.wake = undefined;
    if (pending) setImmediate(pending.resolve);
  }

  private tryEnd(chunk: Uint8Array): [boolean, boolean] {
    // uWS wants writes outside its own callbacks corked (it warns otherwise).
    let result: [boolean, boolean] = [false, false];
    this.ex.res.cork(() => {
      result = this.ex.res.tryEnd(chunk, this.total);
    });
    return result;
  }
}
