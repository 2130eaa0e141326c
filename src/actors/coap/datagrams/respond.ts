import type { RemoteInfo } from 'node:dgram';
import coap, { type IncomingMessage, type OutgoingMessage } from 'coap';
import type { OptionValue } from 'coap';
import { errorStatus } from '../../../shared/errors.js';

// Writing CoAP answers. node-coap's server response splits any payload of 1024 bytes or more
// into Block2 blocks itself, keeps the whole payload per token for later blocks and replaces
// the ETag with a two-byte XOR of the payload. The front-end does Block2 itself (a block read
// from the file, the content hash as ETag), so it ends every response through the plain
// OutgoingMessage.end, which only encodes and sends the packet.

const plainEnd = coap.OutgoingMessage.prototype.end;

export const CONTENT_FORMAT_CBOR = 'application/cbor';
export const CONTENT_FORMAT_OCTETS = 'application/octet-stream';

/** Seconds a device waits after 5.03 before it tries again (sent as Max-Age). */
export const RETRY_AFTER_OVERLOAD_S = 2;

/** The size of the request datagram (node-coap passes dgram's RemoteInfo through as rsinfo). */
export function requestBytes(req: IncomingMessage): number {
  return (req.rsinfo as Partial<RemoteInfo>).size ?? 0;
}

export type Options = Partial<Record<string, OptionValue>>;

export function send(res: OutgoingMessage, code: string, payload: Buffer = Buffer.alloc(0), options: Options = {}): void {
  res.code = code;
  for (const [name, value] of Object.entries(options)) {
    if (value !== undefined) res.setOption(name, value);
  }
  plainEnd.call(res, payload);
}

/**
 * Maps an error through the one registry. The diagnostic payload (RFC 7252 §5.5.2) is the
 * stable code, followed by the message only when the whole still fits in `limitBytes`, so an
 * error never answers more bytes than the request carried. 5.03 carries Max-Age.
 */
export function sendError(res: OutgoingMessage, err: unknown, limitBytes: number, options: Options = {}): string {
  const { code, coap: coapCode, message } = errorStatus(err);
  const full = `${code}: ${message}`;
  const diagnostic = Buffer.byteLength(full) <= limitBytes ? full : code;
  send(res, coapCode, Buffer.from(diagnostic), coapCode === '5.03' ? { 'Max-Age': RETRY_AFTER_OVERLOAD_S, ...options } : options);
  return coapCode;
}
