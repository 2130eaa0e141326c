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
  /** An empty confirmable message (a CoAP ping, RFC 7252 §4.3): answered with a bare RST. */
  | { readonly kind: 'ping'; readonly messageId: number }
  /**
   * A request this server must refuse by its options (RFC 7252 §5.4.1, §5.7.2): an
   * unrecognized critical option (4.02) or a proxy request (5.05). The options that caused
   * it are stripped before node-coap sees the packet; the handler answers `refusal`.
   */
  | { readonly kind: 'refuse'; readonly packet: ParsedPacket; readonly refusal: 'critical-option' | 'proxy' }
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
  if (packet.code === '0.00' && packet.confirmable && packet.token.length === 0 && packet.payload.length === 0 && packet.options.length === 0) {
    return { kind: 'ping', messageId: packet.messageId };
  }
  if (!isRequest(packet)) return { kind: 'pass', packet };
  // Observe (RFC 7641) is elective and this server offers no observable resource, so it is
  // ignored, as an elective option may be. node-coap would otherwise refuse it on a POST with
  // a 5.00 carrying its own 50-byte message: a server error, ten times the request's size.
  if (packet.options.some((o) => optionNumber(o.name) === OBSERVE)) packet.options = packet.options.filter((o) => optionNumber(o.name) !== OBSERVE);
  const refusal = optionRefusal(packet);
  if (refusal) {
    packet.options = packet.options.filter((o) => RECOGNIZED.has(optionNumber(o.name)) || optionNumber(o.name) % 2 === 0);
    return { kind: 'refuse', packet, refusal };
  }
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

/**
 * The critical options (odd numbers) this server acts on: the URI options, Accept, and the
 * block options. Anything else critical, such as If-Match, If-None-Match, OSCORE or the
 * Q-Block options, it does not implement, so it must not answer as if it had (4.02).
 */
const RECOGNIZED = new Set([3, 7, 11, 15, 17, 23, 27]);
const PROXY_OPTIONS = new Set([35, 39]);
const OBSERVE = 6;

function optionNumber(name: string | number): number {
  return typeof name === 'number' ? name : OPTION_NUMBERS[name] ?? Number.parseInt(name, 10);
}

const OPTION_NUMBERS: Record<string, number> = {
  'If-Match': 1, 'Uri-Host': 3, ETag: 4, 'If-None-Match': 5, Observe: 6, 'Uri-Port': 7, 'Location-Path': 8, OSCORE: 9,
  'Uri-Path': 11, 'Content-Format': 12, 'Max-Age': 14, 'Uri-Query': 15, 'Hop-Limit': 16, Accept: 17, 'Q-Block1': 19,
  'Location-Query': 20, Block2: 23, Block1: 27, Size2: 28, 'Q-Block2': 31, 'Proxy-Uri': 35, 'Proxy-Scheme': 39, Size1: 60,
  'No-Response': 258,
};

function optionRefusal(packet: ParsedPacket): 'critical-option' | 'proxy' | undefined {
  let refusal: 'critical-option' | 'proxy' | undefined;
  for (const option of packet.options) {
    const number = optionNumber(option.name);
    if (PROXY_OPTIONS.has(number)) refusal ??= 'proxy';
    else if (number % 2 === 1 && !RECOGNIZED.has(number)) return 'critical-option';
  }
  return refusal;
}
