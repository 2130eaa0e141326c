import { parse, type ParsedPacket } from 'coap-packet';
import { MAX_DEVICE_BODY_BYTES } from '../../shared/wire/validate.js';

// The first look at every datagram, before node-coap sees it. node-coap answers a datagram it
// cannot parse with a 5.00 carrying the parser's message, sent to the source port on the
// local host (not to the source address): a garbage burst would make the server talk. And it
// reassembles Block1 request bodies in memory without a bound. So the front-end owns the
// UDP socket, parses each datagram once with node-coap's own packet codec, and hands node-coap
// only well-formed packets whose body fits in one datagram.

export type DatagramVerdict =
  | { readonly kind: 'drop'; readonly reason: 'unparseable' | 'long-token' }
  /** A request whose body is over the limit or sent block-wise: node-coap answers it 4.13 through the handler. */
  | { readonly kind: 'too-large'; readonly packet: ParsedPacket }
  | { readonly kind: 'pass'; readonly packet: ParsedPacket };

/** Request bodies come in one datagram: a heartbeat or report is a few hundred bytes. */
export const MAX_REQUEST_BODY_BYTES = MAX_DEVICE_BODY_BYTES;

export function inspectDatagram(datagram: Buffer): DatagramVerdict {
  // RFC 7252 §3: token lengths 9 to 15 are a format error. coap-packet reads them as the
  // extended tokens of RFC 8974 (and reads past a short datagram without noticing), which no
  // device of this service sends; refusing them also keeps duplicate-detection keys short.
  if (datagram.length > 0 && (datagram[0]! & 0x0f) > 8) return { kind: 'drop', reason: 'long-token' };
  let packet: ParsedPacket;
  try {
    packet = parse(datagram);
  } catch {
    // RFC 7252 §4.2/§4.3: a message with a format error is silently ignored.
    return { kind: 'drop', reason: 'unparseable' };
  }
  if (!isRequest(packet)) return { kind: 'pass', packet };
  const blockwise = packet.options.some((o) => o.name === 'Block1');
  if (blockwise || packet.payload.length > MAX_REQUEST_BODY_BYTES) {
    // The body is never looked at: node-coap must neither reassemble nor keep it.
    packet.options = packet.options.filter((o) => o.name !== 'Block1');
    packet.payload = Buffer.alloc(0);
    return { kind: 'too-large', packet };
  }
  return { kind: 'pass', packet };
}

/** Method codes are 0.01 to 0.31; 0.00 is an empty message (ACK, RST, ping). */
function isRequest(packet: ParsedPacket): boolean {
  return packet.code.startsWith('0.') && packet.code !== '0.00';
}
