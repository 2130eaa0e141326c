// The Block2 option of RFC 7959 (block-wise transfer): its value codec and block sizes, for
// the CoAP front-end and the agent alike. Which block a request gets is the front-end's
// policy (src/actors/coap/device/block2.ts).

export const MIN_BLOCK_BYTES = 16;
/** SZX 6: the largest block a UDP datagram carries without fragmentation risk. */
export const MAX_BLOCK_BYTES = 1024;

/** A Block2 option value: block number, more-flag and block size. */
export interface BlockOption {
  readonly num: number;
  readonly more: boolean;
  readonly size: number;
}

/**
 * Parses a Block2 option value (0 to 3 bytes: NUM, M, SZX). SZX 7 is reserved (BERT, TCP
 * only) and a value longer than 3 bytes is malformed: both give undefined.
 */
export function parseBlockOption(value: Uint8Array): BlockOption | undefined {
  if (value.length > 3) return undefined;
  let raw = 0;
  for (const byte of value) raw = raw * 256 + byte;
  const szx = raw & 0x7;
  if (szx === 7) return undefined;
  return { num: Math.floor(raw / 16), more: (raw & 0x8) !== 0, size: 2 ** (szx + 4) };
}

/** Encodes NUM, M and SZX in the fewest bytes (RFC 7959 §2.2). */
export function encodeBlockOption(num: number, more: boolean, size: number): Buffer {
  const szx = Math.log2(size) - 4;
  const raw = num * 16 + (more ? 8 : 0) + szx;
  if (raw === 0) return Buffer.alloc(0);
  const bytes = raw < 0x100 ? 1 : raw < 0x10000 ? 2 : 3;
  const out = Buffer.alloc(bytes);
  out.writeUIntBE(raw, 0, bytes);
  return out;
}

/** The largest block size (a power of two from 16 to 1024) that is not above `bytes`. */
export function largestBlockWithin(bytes: number): number {
  let size = MIN_BLOCK_BYTES;
  while (size * 2 <= Math.min(bytes, MAX_BLOCK_BYTES)) size *= 2;
  return size;
}
