import type { HttpResponse } from 'uWebSockets.js';
import { UpdaterError, errorBody, errorStatus, isUpdaterError } from '../../shared/errors.js';

// Writing answers with uWebSockets.js: a response may be aborted by the client at any await,
// so each request carries a small state object and nothing is written after an abort.

export interface Exchange {
  readonly res: HttpResponse;
  aborted: boolean;
  done: boolean;
  /** A HEAD request: every answer carries its headers and Content-Length, never a body. */
  head: boolean;
  /** The status written, for metrics. */
  status?: number;
  /** Set while a write waits for the socket to drain; an abort must wake it too. */
  wake?: () => void;
}

export function exchange(res: HttpResponse, onAbort?: () => void): Exchange {
  const ex: Exchange = { res, aborted: false, done: false, head: false };
  res.onAborted(() => {
    ex.aborted = true;
    ex.wake?.();
    onAbort?.();
  });
  return ex;
}

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK', 204: '204 No Content', 206: '206 Partial Content', 304: '304 Not Modified', 400: '400 Bad Request', 401: '401 Unauthorized',
  404: '404 Not Found', 405: '405 Method Not Allowed', 409: '409 Conflict', 413: '413 Payload Too Large',
  415: '415 Unsupported Media Type', 416: '416 Range Not Satisfiable', 422: '422 Unprocessable Content',
  429: '429 Too Many Requests', 500: '500 Internal Server Error', 501: '501 Not Implemented', 503: '503 Service Unavailable',
};

export function statusLine(status: number): string {
  return STATUS_TEXT[status] ?? `${status} Status`;
}

export function send(ex: Exchange, status: number, body: string, headers: Record<string, string> = {}, contentType = 'application/json'): void {
  if (ex.aborted || ex.done) return;
  ex.done = true;
  ex.status = status;
  ex.res.cork(() => {
    ex.res.writeStatus(statusLine(status));
    if (body !== '' || (status !== 204 && status !== 304)) ex.res.writeHeader('Content-Type', contentType);
    for (const [name, value] of Object.entries(headers)) ex.res.writeHeader(name, value);
    if (status === 304) ex.res.endWithoutBody();
    else if (ex.head) ex.res.endWithoutBody(Buffer.byteLength(body));
    else ex.res.end(body);
  });
}

export function sendJson(ex: Exchange, status: number, value: unknown): void {
  send(ex, status, JSON.stringify(value));
}

/** Maps any error to its registry status and the JSON error body of interface.md. */
export function sendError(ex: Exchange, err: unknown, headers: Record<string, string> = {}): void {
  const { code, http, message } = errorStatus(err);
  const allow = isUpdaterError(err) && code === 'METHOD_NOT_ALLOWED' ? err.details?.allow : undefined;
  send(ex, http, errorBody(code, message), Array.isArray(allow) ? { Allow: allow.join(', '), ...headers } : headers);
}

/** A 405 that names the methods the resource takes (RFC 9110 §15.5.6: Allow is required). */
export function methodNotAllowed(allow: readonly string[]): UpdaterError {
  return new UpdaterError('METHOD_NOT_ALLOWED', `this resource takes ${allow.join(', ')}`, { allow });
}
