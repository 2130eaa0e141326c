import { STATUS_CODES } from 'node:http';
import type { HttpResponse } from 'uWebSockets.js';
import { UpdaterError, errorBody, errorStatus, isUpdaterError } from '../../../shared/errors.js';

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

// What uWS is handed on every answer goes as bytes: it reads a Buffer where it lies, while a
// string it first measures, copies to UTF-8 into memory of its own and frees, call by call.

/** uWS takes the whole status line; built once per status from node:http's reason phrases. */
const STATUS_LINES = new Map<number, Buffer>();

export function statusLine(status: number): Buffer {
  let line = STATUS_LINES.get(status);
  if (line === undefined) {
    line = Buffer.from(`${status} ${STATUS_CODES[status] ?? 'Status'}`, 'latin1');
    STATUS_LINES.set(status, line);
  }
  return line;
}

const CONTENT_TYPE = Buffer.from('Content-Type');
const JSON_TYPE = 'application/json';
const JSON_TYPE_BYTES = Buffer.from(JSON_TYPE);

const NO_HEADERS: Record<string, string> = Object.freeze({});

export function send(ex: Exchange, status: number, body: string, headers: Record<string, string> = NO_HEADERS, contentType = JSON_TYPE): void {
  if (ex.aborted || ex.done) return;
  ex.done = true;
  writeAnswer(ex, status, body, headers, contentType);
}

/** Writes the answer of an exchange already counted as answered (`send`, or an answer held for the turn's end, turn-end-answers.ts). */
export function writeAnswer(ex: Exchange, status: number, body: string | Buffer, headers: Record<string, string> = NO_HEADERS, contentType = JSON_TYPE): void {
  ex.status = status;
  ex.res.cork(() => {
    ex.res.writeStatus(statusLine(status));
    if (body.length > 0 || (status !== 204 && status !== 304)) ex.res.writeHeader(CONTENT_TYPE, contentType === JSON_TYPE ? JSON_TYPE_BYTES : contentType);
    if (headers !== NO_HEADERS) for (const [name, value] of Object.entries(headers)) ex.res.writeHeader(name, value);
    if (status === 304) ex.res.endWithoutBody();
    else if (ex.head) ex.res.endWithoutBody(Buffer.byteLength(body));
    else ex.res.end(body);
  });
}

export function sendJson(ex: Exchange, status: number, value: unknown): void {
  send(ex, status, JSON.stringify(value));
}

/** Maps any error to its registry status and the JSON error body (docs/protocol.md, "Errors"). */
export function sendError(ex: Exchange, err: unknown, headers: Record<string, string> = {}): void {
  const { code, http, message } = errorStatus(err);
  const allow = isUpdaterError(err) && code === 'METHOD_NOT_ALLOWED' ? err.details?.allow : undefined;
  send(ex, http, errorBody(code, message), Array.isArray(allow) ? { Allow: allow.join(', '), ...headers } : headers);
}

/** A 405 that names the methods the resource takes (RFC 9110 §15.5.6: Allow is required). */
export function methodNotAllowed(allow: readonly string[]): UpdaterError {
  return new UpdaterError('METHOD_NOT_ALLOWED', `this resource takes ${allow.join(', ')}`, { allow });
}
