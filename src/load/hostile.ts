import { randomBytes } from 'node:crypto';

// Hostile device input, for the hostile-input tests and for a soak that mixes it into normal
// traffic: datagrams that are not CoAP, CoAP requests a conformant server must refuse, and
// request bodies built to hurt a decoder. Every generator is deterministic in its index, so a
// run can be repeated, and bounded in size.

/** Datagrams that are not CoAP at all: wrong version, shorter than a header, reserved token lengths. */
export function garbageDatagram(i: number): Buffer {
  const bytes = randomBytes(1 + (i % 300));
  switch (i % 3) {
    case 0: bytes[0] = bytes[0]! & 0x3f; break; // version 0
    case 1: return bytes.subarray(0, Math.min(bytes.length, 3)); // shorter than a header
    default: if (bytes.length >= 4) bytes[0] = 0x40 | 0x09 | (bytes[0]! & 0x30); else bytes[0] = 0x00; // TKL 9 is reserved
  }
  return bytes;
}

/** A CoAP ping: an empty confirmable message (RFC 7252 §4.3); a server answers a 4-byte Reset. */
export function coapPing(messageId: number): Buffer {
  return Buffer.from([0x40, 0x00, (messageId >> 8) & 0xff, messageId & 0xff]);
}

/** A 5-byte confirmable POST with an empty Observe option and no path. */
export const OBSERVE_POST = Buffer.from([0x40, 0x02, 0x00, 0x01, 0x60]);

/**
 * Heartbeat bodies (CBOR) that must each be refused with 4.00: truncated, huge declared
 * lengths, deep nesting, a non-map, trailing bytes, nothing. `whole` is a valid heartbeat;
 * `nested` a valid-looking heartbeat whose device_id nests maps too deep.
 */
export function hostileCborBodies(whole: Buffer, nested: Buffer): [string, Buffer][] {
  return [
    ['truncated CBOR', whole.subarray(0, whole.length - 7)],
    ['an array header declaring 2^32-1 elements', Buffer.from([0x9a, 0xff, 0xff, 0xff, 0xff, 0x01])],
    ['a 2^64-1 element array', Buffer.from([0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])],
    ['a byte string declaring 4 GiB', Buffer.from([0x5a, 0xff, 0xff, 0xff, 0xff, 0x00])],
    ['a map declaring 2^32-1 entries', Buffer.from([0xba, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02])],
    ['arrays nested 1000 deep', Buffer.concat([Buffer.alloc(1000, 0x81), Buffer.from([0x01])])],
    ['maps nested 6 deep', nested],
    ['an indefinite array never closed', Buffer.from([0x9f, 0x9f, 0x9f, 0x01])],
    ['a CBOR integer instead of a map', Buffer.from([0x01])],
    ['trailing bytes after the map', Buffer.concat([whole, Buffer.from([0x00])])],
    ['an empty body', Buffer.alloc(0)],
  ];
}
