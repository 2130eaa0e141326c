import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { errorBody, UpdaterError } from '../../../shared/errors.js';
import { statusLine } from './respond.js';

// Request framing that uWebSockets.js 20.30 accepts but must not: every route of every
// listener passes through this guard first (docs/operations.md, "HTTP framing").
//
// uWS frames a body by the FIRST Content-Length header and parses whatever follows as the next
// request. Two differing values are how a request is smuggled past a proxy that reads the other
// one (RFC 9112 §6.3: 400, then close). The guard answers 400 with `Connection: close`, but
// only on the next turn of the event loop: until then the request is pending, and uWS closes a
// connection on which another request arrives while one is pending (it refuses asynchronous
// pipelining). So bytes that follow the refused request on the same connection are never
// dispatched to a handler, whichever Content-Length a proxy in front believed.

type Route = (res: HttpResponse, req: HttpRequest) => void | Promise<void>;

const ROUTE_METHODS = ['get', 'post', 'put', 'del', 'patch', 'head', 'options', 'connect', 'trace', 'any'] as const;

/** Why the request's framing cannot be trusted, or undefined when it can. Reads only headers. */
export function framingProblem(req: HttpRequest): string | undefined {
  let length: string | undefined;
  let problem: string | undefined;
  req.forEach((name, value) => {
    if (problem || name !== 'content-length') return;
    if (length !== undefined && value !== length) problem = 'two Content-Length headers with different values';
    length = value;
  });
  return problem;
}

/** Refuses the request with 400 and closes the connection once the answer is written. */
function refuse(res: HttpResponse, why: string): void {
  let aborted = false;
  res.onAborted(() => (aborted = true));
  setImmediate(() => {
    if (aborted) return;
    res.cork(() => {
      res.writeStatus(statusLine(400));
      res.writeHeader('Content-Type', 'application/json');
      // end(body, true): uWS writes `Connection: close` and closes once the answer is out.
      res.end(errorBody('BAD_FRAMING', `${new UpdaterError('BAD_FRAMING').message}: ${why}`), true);
    });
  });
}

/** The route wrapped by the framing guard. */
export function guarded(handler: Route): Route {
  return (res, req) => {
    const problem = framingProblem(req);
    if (problem === undefined) return handler(res, req);
    refuse(res, problem);
  };
}

/** Makes every route registered on `app` from now on pass through the framing guard. */
export function guardFraming(app: TemplatedApp): TemplatedApp {
  const routes = app as unknown as Record<(typeof ROUTE_METHODS)[number], (pattern: string, handler: Route) => TemplatedApp>;
  for (const method of ROUTE_METHODS) {
    const register = routes[method].bind(app);
    routes[method] = (pattern, handler) => register(pattern, guarded(handler));
  }
  return app;
}
