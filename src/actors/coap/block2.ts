// Block-wise transfer of a download (RFC 7959, Block2), stateless on the server: every block
// request names its number and size, so any block can be asked for directly and a device
// resumes after a pause by asking for the block after the last one it verified.

export const MIN_BLOCK_BYTES = 16;
export const MAX_BLOCK_BYTES = 1024;

/** Block2 option value as sent by the client. */
export interface BlockRequest {
  readonly num: number;
  readonly size: number;
}

export type BlockSelection =
  | { readonly kind: 'block'; readonly num: number; readonly size: number; readonly offset: number; readonly length: number; readonly more: boolean }
  | { readonly kind: 'out-of-range' };

/**
 * Parses a Block2 option value (0 to 3 bytes: NUM, M, SZX). SZX 7 is reserved (BERT, TCP
 * only) and a value longer than 3 bytes is malformed: both are a client mistake.
 */
export function parseBlockOption(value: Buffer): BlockRequest | undefined {
  if (value.length > 3) return undefined;
  let raw = 0;
  for (const byte of value) raw = raw * 256 + byte;
  const szx = raw & 0x7;
  if (szx === 7) return undefined;
  return { num: Math.floor(raw / 16), size: 2 ** (szx + 4) };
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

/**
 * The block size a request without Block2 gets: the largest block size that is no larger
 * than the request datagram itself, so an unverified source can never make the server send
 * more than it received (RFC 7252 §11.3). The device asks for bigger blocks explicitly.
 */
export function unaskedBlockSize(requestBytes: number): number {
  let size = MIN_BLOCK_BYTES;
  while (size * 2 <= Math.min(requestBytes, MAX_BLOCK_BYTES)) size *= 2;
  return size;
}

/** Which bytes of a transfer of `total` bytes a request gets. */
export function selectBlock(requested: BlockRequest | undefined, total: number, requestBytes: number): BlockSelection {
  const num = requested?.num ?? 0;
  const size = requested?.size ?? unaskedBlockSize(requestBytes);
  const offset = num * size;
  // Block 0 of an empty transfer is an empty, final block; past the end is nothing.
  if (offset > 0 && offset >= total) return { kind: 'out-of-range' };
  const length = Math.min(size, total - offset);
  return { kind: 'block', num, size, offset, length, more: offset + length < total };
}

/**
 * The manifest's chunk over CoAP. interface.md: `chunk_size` is the Block2 size a device
 * should request, so the configured `manifest.chunk_size` (an HTTP Range length, 64 KiB by
 * default) is brought down to the largest Block2 size not above it; `total_chunks` follows.
 */
export function coapChunkSize(configured: number): number {
  let size = MIN_BLOCK_BYTES;
  while (size * 2 <= Math.min(configured, MAX_BLOCK_BYTES)) size *= 2;
  return size;
}
