import type { DeviceGate } from '../../front-ends/device-gate.js';
import type { HeartbeatAnswers } from '../../front-ends/heartbeat-answers.js';
import { heartbeatFields } from '../../../shared/wire/cbor.js';
import { validateHeartbeat, type Heartbeat } from '../../../shared/wire/validate.js';
import { queryToken, type RequestOptions } from './auth-route.js';

// What a CoAP heartbeat decides before anything is sent: the device let in, its body decoded
// and validated once, its answer taken from the decision snapshot (at once) or from the
// manifester (later). Two paths take it: node-coap's request handler (routes.ts) and the
// direct answer of a plain confirmable heartbeat (direct-heartbeat.ts), each reading the
// request in its own form.

export interface HeartbeatOutcome {
  readonly heartbeat: Heartbeat;
  /** The CBOR answer. */
  readonly body: Buffer;
  readonly receivedAtMs: number;
}

/** Throws the request's refusal (token, body, fields) with its stable code. */
export type HeartbeatDecision<R> = (request: R) => HeartbeatOutcome | Promise<HeartbeatOutcome>;

/** How one path reads a request: its options, and its body (refused by a throw when it cannot be one). */
export interface RequestReader<R> {
  options(request: R): RequestOptions;
  body(request: R): Buffer;
}

export function heartbeatDecision<R>(gate: DeviceGate, answers: HeartbeatAnswers<Uint8Array>, read: RequestReader<R>): HeartbeatDecision<R> {
  const outcome = (heartbeat: Heartbeat, answer: Uint8Array, receivedAtMs: number): HeartbeatOutcome =>
    ({ heartbeat, body: Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength), receivedAtMs });
  return (request) => {
    const receivedAtMs = Date.now();
    // The token first: a request without a valid one costs no decoding.
    const pass = gate.admit(gate.on ? queryToken(read.options(request)) : undefined);
    const heartbeat = validateHeartbeat(heartbeatFields(read.body(request)));
    gate.requireDevice(pass, heartbeat.deviceId);
    const answer = answers.answer(heartbeat);
    return answer instanceof Promise
      ? answer.then((later) => outcome(heartbeat, later, receivedAtMs))
      : outcome(heartbeat, answer, receivedAtMs);
  };
}
