import type { HttpResponse } from 'uWebSockets.js';
import { UpdaterError, errorIsInternal } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import type { HttpMetrics } from './metrics.js';
import { exchange, sendError, type Exchange } from './respond.js';

// What every HTTP route does around its handler, device and admin alike (one place, issue 37):
// count the request under its route's name, refuse it while the server drains (503 with
// Connection: close), and answer a failed handler with the error registry's status, logging
// only the failures that are the server's own.

export interface RouteServing {
  metrics: HttpMetrics;
  isDraining(): boolean;
  log: Logger;
}

export interface OpenRequest {
  ex: Exchange;
  /** Records the request with the status written (499 when none was: the client went away). */
  done(): void;
}

/**
 * Starts one request of route `name`. While the server drains it is answered 503 and recorded
 * here, and undefined is returned. `onDone` runs with the status whenever the request is
 * recorded (the admin routes' audit row).
 */
export function openRequest(res: HttpResponse, name: string, serving: RouteServing, head = false, onDone?: (status: number) => void): OpenRequest | undefined {
  const ex = exchange(res);
  ex.head = head;
  const stop = serving.metrics.startRequest(name);
  const done = () => {
    const status = ex.status ?? 499;
    stop(status);
    onDone?.(status);
  };
  if (refuseWhileDraining(ex, serving)) {
    done();
    return undefined;
  }
  return { ex, done };
}

/** While the server drains, answers 503 with `Connection: close` and returns true; the caller records the request. */
export function refuseWhileDraining(ex: Exchange, serving: RouteServing): boolean {
  if (!serving.isDraining()) return false;
  sendError(ex, new UpdaterError('SHUTTING_DOWN'), { Connection: 'close' });
  return true;
}

/** Answers a handler's failure with the registry's status; logged when the fault is the server's. */
export function answerFailure(ex: Exchange, err: unknown, name: string, log: Logger, what: string): void {
  if (errorIsInternal(err)) log.error({ err, route: name }, what);
  sendError(ex, err);
}
