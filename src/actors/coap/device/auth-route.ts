import type { IncomingMessage, OutgoingMessage } from 'coap';
import { authRequestFields, encodeAuthAnswer } from '../../../shared/wire/cbor.js';
import type { DeviceGate } from '../../front-ends/device-gate.js';
import { CONTENT_FORMAT_CBOR, send } from '../datagrams/respond.js';
import type { Handler } from './handler.js';

// Device identity over CoAP (devices.auth: on; docs/protocol.md "Device authentication"):
// POST /auth with the CBOR request, answered 2.05 with `{1: token, 2: expires_in}` or
// `{3: "pending", 4: retry_after}`; a device's token rides on each request as Uri-Query `auth=`.

const AUTH_QUERY = 'auth=';
const AUTH_QUERY_BYTES = Buffer.from(AUTH_QUERY);

/** Parsed options, as coap-packet gives them or as node-coap has since converted their values. */
export type RequestOptions = readonly { readonly name: string | number; readonly value: unknown }[] | undefined;

/**
 * The token of a request's `auth=` Uri-Query option; undefined without one. Decoded from past
 * the prefix, so the token is a string of its own: a slice would be read through its parent on
 * every comparison of the token check.
 */
export function queryToken(options: RequestOptions): string | undefined {
  for (const option of options ?? []) {
    if (option.name !== 'Uri-Query') continue;
    const value = option.value;
    if (Buffer.isBuffer(value)) {
      if (value.length >= AUTH_QUERY_BYTES.length && value.compare(AUTH_QUERY_BYTES, 0, AUTH_QUERY_BYTES.length, 0, AUTH_QUERY_BYTES.length) === 0) {
        return value.toString('utf8', AUTH_QUERY_BYTES.length);
      }
      continue;
    }
    const text = String(value);
    if (text.startsWith(AUTH_QUERY)) return text.slice(AUTH_QUERY.length);
  }
  return undefined;
}

export function authRoute(gate: DeviceGate, body: (req: IncomingMessage) => Buffer): Handler {
  return async (req: IncomingMessage, res: OutgoingMessage) => {
    const outcome = await gate.authenticate(authRequestFields(body(req)));
    const answer = outcome.state === 'accepted'
      ? { token: outcome.token, expires_in: outcome.expiresIn }
      : { state: 'pending', retry_after: outcome.retryAfter };
    send(res, '2.05', encodeAuthAnswer(answer), { 'Content-Format': CONTENT_FORMAT_CBOR });
    return '2.05';
  };
}
