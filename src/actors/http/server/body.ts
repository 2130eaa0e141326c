import type { HttpRequest } from 'uWebSockets.js';
import { UpdaterError } from '../../../shared/errors.js';
import type { Exchange } from './respond.js';

/**
 * Collects a request body of at most `limit` bytes and hands it to `then`, or the reason it was
 * refused to `fail` (as does a throw inside `then`). A declared Content-Length over the limit
 * is refused before a byte is read; a body that grows past it (chunked) is refused as soon
 * as it does. Must be called synchronously inside the route handler. Without a promise: the
 * heartbeat route answers from inside `then`, in the same turn as its body arrives.
 */
export function onBody(ex: Exchange, req: HttpRequest, limit: number, then: (body: Buffer) => void, fail: (err: unknown) => void): void {
  const declared = req.getHeader('content-length');
  if (declared !== '' && (!/^\d+$/.test(declared) || Number(declared) > limit)) {
    fail(new UpdaterError('BODY_TOO_LARGE', `the body must be at most ${limit} bytes`));
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let refused = false;
  ex.res.onData((chunk, isLast) => {
    if (refused) return;
    size += chunk.byteLength;
    if (size > limit) {
      refused = true;
      fail(new UpdaterError('BODY_TOO_LARGE', `the body must be at most ${limit} bytes`));
      return;
    }
    // uWS reuses the chunk's memory after this callback returns: copy it (once). Through a
    // view into Node's buffer pool: a copy of the ArrayBuffer wrapped afterwards (slice(0))
    // costs four times as much, about 0.5 µs of every heartbeat.
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (!isLast) return;
    try {
      then(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    } catch (err) {
      fail(err);
    }
  });
}

/** onBody() as a promise, for the routes where an await costs nothing that matters. */
export function readBody(ex: Exchange, req: HttpRequest, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => onBody(ex, req, limit, resolve, reject));
}

export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new UpdaterError('MALFORMED_BODY', 'the body is not valid JSON');
  }
}
