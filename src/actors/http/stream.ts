import { open, type FileHandle } from 'node:fs/promises';
import type { TransferLocation } from '../../messages/store.js';
import type { TransferLocator } from '../transfer-locator.js';
import { statusLine, type Exchange } from './respond.js';

const CHUNK_BYTES = 64 * 1024;

/**
 * Streams `length` bytes of a transfer starting at `start`, from the hot cache's shared
 * memory or from the immutable file, pausing whenever the socket's buffer is full
 * (uWS backpressure: tryEnd reports not ok, onWritable says when to go on).
 */
export async function streamTransfer(ex: Exchange, location: TransferLocation, start: number, length: number, status: number,
  headers: Record<string, string>, locator: TransferLocator): Promise<void> {
  const { res } = ex;
  let file: FileHandle | undefined;
  const shared = location.shared ? new Uint8Array(location.shared) : undefined;
  if (!shared) {
    try {
      file = await open(location.path, 'r');
    } catch (err) {
      // Removed by retention since it was located: the transfer is gone.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw locator.gone(location);
      throw err;
    }
  }
  try {
    if (ex.aborted) return;
    ex.status = status;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      res.writeHeader('Content-Type', 'application/zstd');
      res.writeHeader('Accept-Ranges', 'bytes');
      res.writeHeader('ETag', `"${location.hash}"`);
      for (const [name, value] of Object.entries(headers)) res.writeHeader(name, value);
    });
    if (length === 0) {
      res.cork(() => res.end());
      ex.done = true;
      return;
    }
    let sent = 0;
    const buffer = shared ? undefined : Buffer.allocUnsafe(CHUNK_BYTES);
    while (sent < length && !ex.aborted) {
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
      const written = await writeChunk(ex, chunk, length);
      sent += written;
      if (ex.done) return;
    }
  } finally {
    await file?.close();
  }
}

/** Writes one chunk, waiting for the socket to drain when it must. Resolves with the bytes written. */
function writeChunk(ex: Exchange, chunk: Uint8Array, total: number): Promise<number> {
  const { res } = ex;
  const base = res.getWriteOffset();
  let ok = false;
  let done = false;
  res.cork(() => {
    [ok, done] = res.tryEnd(chunk, total);
  });
  if (done) ex.done = true;
  if (ok || done) return Promise.resolve(chunk.byteLength);
  return new Promise((resolve) => {
    ex.wake = () => resolve(chunk.byteLength);
    res.onWritable((offset) => {
      if (ex.aborted) {
        resolve(chunk.byteLength);
        return true;
      }
      let retryOk = false;
      let retryDone = false;
      res.cork(() => {
        [retryOk, retryDone] = res.tryEnd(chunk.subarray(offset - base), total);
      });
      if (retryDone) ex.done = true;
      if (retryOk || retryDone) resolve(chunk.byteLength);
      return retryOk;
    });
  });
}
