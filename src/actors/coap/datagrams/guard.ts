import { parse, type ParsedPacket } from 'coap-packet';
import { MAX_DEVICE_BODY_BYTES } from '../../../shared/wire/validate.js';

// The first look at every datagram, before node-coap sees it. node-coap answers a datagram it
// cannot parse with a 5.00 carrying the parser's message, sent to the source port on the
// local host (not to the source address): a garbage burst would make the server talk. And it
// reassembles Block1 request bodies in memory without a bound. So the front-end owns the
// UDP socket, parses each datagram once with node-coap's own packet codec, and hands node-coap
// only well-formed packets whose body fits in one datagram.

export type DatagramVerdict =
  | { readonly kind: 'drop'; readonly reason: 'unparseable' | 'long-token' | 'malformed' }
  /** An empty confirmable message (a CoAP ping, RFC 7252 §4.3): answered with a bare RST. */
  | { readonly kind: 'ping'; readonly messageId: number }
  /**
   * A confirmable message with a format error (RFC 7252 §3: a truncated option, a payload
   * marker with no payload, a reserved option nibble): rejected with a bare RST (§4.2), 4 bytes
   * for at least 5, and processed no further. A non-confirmable one is dropped (§4.3).
   */
  | { readonly kind: 'reject'; readonly messageId: number }
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
  // coap-packet reads past a truncated option and takes a payload marker with nothing after
  // it for no payload; node-coap then answered such a request as if it were whole (4.04).
  const numbers = optionNumbers(datagram);
  if (numbers === undefined || numbers.length !== packet.options.length) {
    return packet.confirmable ? { kind: 'reject', messageId: packet.messageId } : { kind: 'drop', reason: 'malformed' };
  }
  if (!isRequest(packet)) return { kind: 'pass', packet };
  // Each option with its number, read from the datagram: coap-packet names the options it
  // knows, and a name table of ours lacking one (2049, 2053) once let a critical option pass.
  let options = packet.options.map((option, i) => ({ option, number: numbers[i]! }));
  const keep = (wanted: (number: number) => boolean) => {
    options = options.filter((o) => wanted(o.number));
    packet.options = options.map((o) => o.option);
  };
  // Observe (RFC 7641) is elective and this server offers no observable resource, so it is
  // ignored, as an elective option may be. node-coap would otherwise refuse it on a POST with
  // a 5.00 carrying its own 50-byte message: a server error, ten times the request's size.
  if (options.some((o) => o.number === OBSERVE)) keep((n) => n !== OBSERVE);
  const refusal = optionRefusal(options.map((o) => o.number));
  if (refusal) {
    keep((n) => RECOGNIZED.has(n) || !isCritical(n));
    return { kind: 'refuse', packet, refusal };
  }
  const blockwise = options.some((o) => o.number === BLOCK1);
  if (blockwise || packet.payload.length > MAX_REQUEST_BODY_BYTES) {
    // The body is never looked at: node-coap must neither reassemble nor keep it.
    keep((n) => n !== BLOCK1);
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
 * The critical options this server acts on: the URI options, Accept, and the block options.
 * Anything else critical, such as If-Match, If-None-Match, OSCORE, the Q-Block options or
 * OCF's 2049 and 2053, it does not implement, so it must not answer as if it had (4.02).
 */
const RECOGNIZED = new Set([3, 7, 11, 15, 17, 23, 27]);
const PROXY_OPTIONS = new Set([35, 39]);
const OBSERVE = 6;
const BLOCK1 = 27;

/** RFC 7252 §5.4.1: an option is critical when its number is odd, whatever its name. */
function isCritical(number: number): boolean {
  return number % 2 === 1;
}

function optionRefusal(numbers: readonly number[]): 'critical-option' | 'proxy' | undefined {
  let refusal: 'critical-option' | 'proxy' | undefined;
  for (const number of numbers) {
    if (PROXY_OPTIONS.has(number)) refusal ??= 'proxy';
    else if (isCritical(number) && !RECOGNIZED.has(number)) return 'critical-option';
  }
  return refusal;
}

/**
 * The option numbers of a datagram, in order, read from its bytes (RFC 7252 §3.1); undefined
 * for a format error: an option running past the end, a reserved nibble (15) that is not the
 * payload marker, or a payload marker followed by no payload (§3: "MUST be processed as a
 * message format error"). The token length is at most 8 here (checked before).
 */
export function optionNumbers(datagram: Buffer): number[] | undefined {
  let at = 4 + (datagram[0]! & 0x0f);
  if (at > datagram.length) return undefined;
  const numbers: number[] = [];
  let number = 0;
  while (at < datagram.length) {
    const byte = datagram[at]!;
    if (byte === 0xff) return at + 1 < datagram.length ? numbers : undefined;
    at++;
    const delta = extended(byte >> 4);
    const length = extended(byte & 0x0f);
    if (delta === undefined || length === undefined || at > datagram.length) return undefined;
    number += delta;
    at += length;
    if (at > datagram.length) return undefined;
    numbers.push(number);
  }
  return numbers;

  /** A delta or length nibble with its extended bytes (13: one more byte, 14: two); moves `at`. */
  function extended(nibble: number): number | undefined {
    if (nibble < 13) return nibble;
    if (nibble === 15) return undefined;
    const bytes = nibble === 13 ? 1 : 2;
    if (at + bytes > datagram.length) return undefined;
    const value = nibble === 13 ? datagram[at]! + 13 : datagram.readUInt16BE(at) + 269;
    at += bytes;
    return value;
  }
}
