import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { validateHeartbeat, MAX_DEVICE_BODY_BYTES, type Heartbeat } from '../../../shared/wire/validate.js';
import { BodyCollector, bodyText, parseJson } from '../server/body.js';
import type { Exchange } from '../server/respond.js';
import { answerFailure, refuseWhileDraining, type RouteServing } from '../server/route.js';
import { answerAtTurnEnd, type HeldAnswer } from '../server/turn-end-answers.js';
import type { DeviceApp, RouteDeps } from './route-types.js';

// POST /heartbeat, the busiest route, as one object per request. The generic device route
// (routes.ts) wraps a handler in layers of closures: the request's opening and recording, the
// body's collection, the answer and the inventory's feed, each a function and a context made
// per request, called through call sites every route shares. Switched every 2.5 s inside one
// server under load, this object cost 2.0 and 0.7 µs a heartbeat less than those layers doing
// the same work, in two runs of 150 s
// (bench/results/2026-11-29-heartbeat-noise-and-floors.md). What it does is the generic
// route's: refused while the server drains, counted under `heartbeat`, the body bounded before
// and while it is read, the device token checked before the body is parsed, the answer written
// at the turn's end (turn-end-answers.ts), and only then the heartbeat handed to the inventory.

/** The handler of one device listener's heartbeats; `certifiedIdOf` reads the certificate front's device. */
export function heartbeatHandler(deps: RouteDeps, serving: RouteServing, authorizationOf: (req: HttpRequest) => string, certifiedIdOf: DeviceApp['certifiedId']): (res: HttpResponse, req: HttpRequest) => void {
  const record = serving.metrics.requestRecorder('heartbeat');
  return (res, req) => {
    // Headers are read now: uWS reuses the request object once this handler returns.
    const call = new HeartbeatCall(res, deps, serving.log, record, certifiedIdOf?.(req), authorizationOf(req));
    res.onAborted(() => call.abort());
    if (refuseWhileDraining(call, serving)) {
      call.finish();
      return;
    }
    const body = new BodyCollector(req, MAX_DEVICE_BODY_BYTES);
    if (body.refusal) {
      call.fail(body.refusal);
      return;
    }
    res.onData((chunk, isLast) => {
      try {
        const text = body.add(chunk, isLast, bodyText);
        if (text !== undefined) call.received(text);
      } catch (err) {
        call.fail(err);
      }
    });
  };
}

/** One heartbeat request: its exchange, the answer it holds for the turn's end, and its count in the request metrics. */
class HeartbeatCall implements Exchange, HeldAnswer {
  readonly ex: Exchange = this;
  aborted = false;
  done = false;
  head = false;
  status?: number;
  wake?: () => void;
  /** Set once the answer is held: what the turn's end writes. */
  body = '';
  private heartbeat: Heartbeat | undefined;
  private recorded = false;
  private readonly started = performance.now();
  private readonly receivedAtMs = Date.now();

  constructor(
    readonly res: HttpResponse,
    private readonly deps: RouteDeps,
    private readonly log: RouteServing['log'],
    private readonly record: (status: number, started: number) => void,
    private readonly certifiedId: string | undefined,
    private readonly authorization: string,
  ) {}

  abort(): void {
    this.aborted = true;
    this.wake?.();
  }

  /** The whole body, as text: parsed and validated once, answered, and (once answered) recorded. */
  received(text: string): void {
    const { gate, heartbeats } = this.deps;
    const pass = gate.admitBearer(this.authorization, this.certifiedId);
    const heartbeat = validateHeartbeat(parseJson(text));
    gate.requireDevice(pass, heartbeat.deviceId);
    this.heartbeat = heartbeat;
    const answer = heartbeats.answer(heartbeat);
    if (typeof answer === 'string') this.hold(answer);
    else answer.then((a) => this.hold(a)).catch((err: unknown) => this.fail(err));
  }

  private hold(answer: string): void {
    this.body = answer;
    answerAtTurnEnd(this);
  }

  /** The answer is written (or the client went away meanwhile): only an answered heartbeat enters the inventory. */
  answered(): void {
    try {
      this.deps.fleet.heartbeat(this.heartbeat!, 'http', this.receivedAtMs);
      this.finish();
    } catch (err) {
      this.fail(err);
    }
  }

  fail(err: unknown): void {
    answerFailure(this, err, 'heartbeat', this.log, 'request failed');
    this.finish();
  }

  /** Counts the request once, with the status written (499 when none was: the client went away). */
  finish(): void {
    if (this.recorded) return;
    this.recorded = true;
    this.record(this.status ?? 499, this.started);
  }
}
