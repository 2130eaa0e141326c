import { connect } from 'node:net';

// Raw HTTP/1.1 over a TCP socket, for requests no HTTP client library would send (framing
// tests): the bytes go out as given and the answers are split by their Content-Length.

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawOutcome {
  responses: RawResponse[];
  /** Whether the server closed the connection (false: it was still open at the deadline or once `answers` arrived). */
  closedByServer: boolean;
  /** Milliseconds from the write to the close, or to when the wait ended. */
  ms: number;
  /** Bytes received after the last whole response. */
  rest: string;
}

/**
 * Writes `payload` (one string, or parts written one after another) and waits until the server
 * closes, `answers` whole responses have arrived, or `deadlineMs` passes.
 */
export function rawExchange(port: number, payload: string | string[], options: { answers?: number; deadlineMs?: number } = {}): Promise<RawOutcome> {
  const deadlineMs = options.deadlineMs ?? 30_000;
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    let received = '';
    let finished = false;
    const finish = (closedByServer: boolean) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      const { responses, rest } = splitResponses(received);
      resolve({ responses, closedByServer, ms: Date.now() - started, rest });
    };
    const timer = setTimeout(() => finish(false), deadlineMs);
    socket.on('data', (d) => {
      received += d.toString('latin1');
      if (options.answers !== undefined && splitResponses(received).responses.length >= options.answers) finish(false);
    });
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('connect', () => {
      for (const part of Array.isArray(payload) ? payload : [payload]) socket.write(part, 'latin1');
    });
  });
}

function splitResponses(text: string): { responses: RawResponse[]; rest: string } {
  const responses: RawResponse[] = [];
  let at = 0;
  for (;;) {
    const headEnd = text.indexOf('\r\n\r\n', at);
    if (headEnd < 0) break;
    const [statusLine, ...lines] = text.slice(at, headEnd).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    const bodyStart = headEnd + 4;
    if (text.length < bodyStart + length) break;
    responses.push({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0), headers, body: text.slice(bodyStart, bodyStart + length) });
    at = bodyStart + length;
  }
  return { responses, rest: text.slice(at) };
}
