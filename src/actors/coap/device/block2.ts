import { largestBlockWithin, MIN_BLOCK_BYTES, type BlockOption } from '../../../shared/wire/block2.js';

// Block-wise transfer of a download (RFC 7959, Block2), stateless on the server: every block
// request names its number and size, so any block can be asked for directly and a device
// resumes after a pause by asking for the block after the last one it verified. The option's
// codec is in src/shared/wire/block2.ts.

export type BlockSelection =
  | { readonly kind: 'block'; readonly num: number; readonly size: number; readonly offset: number; readonly length: number; readonly more: boolean }
  | { readonly kind: 'out-of-range' };

/**
 * The block size a request without Block2 gets: the largest block size that is no larger
 * than the request datagram itself, so an unverified source can never make the server send
 * more than it received (RFC 7252 §11.3). The device asks for bigger blocks explicitly.
 */
export function unaskedBlockSize(requestBytes: number): number {
  return largestBlockWithin(requestBytes);
}

/**
 * The block an unproven source gets when it asked for `requested`: the same offset in the
 * largest block size whose bytes fit `budgetBytes` (RFC 7959 §2.4: a server may answer with a
 * smaller size, the block number scaled so the block starts where the asked one does). Never
 * below 16 bytes: the smallest download request (a 64-character hash in the path) is over
 * 70 bytes, so 16 bytes and the options stay within the budget.
 */
export function unprovenBlock(requested: BlockOption, budgetBytes: number): BlockOption {
  let size = requested.size;
  while (size > MIN_BLOCK_BYTES && size > budgetBytes) size /= 2;
  return size === requested.size ? requested : { num: requested.num * (requested.size / size), more: requested.more, size };
}

/** Which bytes of a transfer of `total` bytes a request gets. */
export function selectBlock(requested: Pick<BlockOption, 'num' | 'size'> | undefined, total: number, requestBytes: number): BlockSelection {
  const num = requested?.num ?? 0;
  const size = requested?.size ?? unaskedBlockSize(requestBytes);
  const offset = num * size;
  // Block 0 of an empty transfer is an empty, final block; past the end is nothing.
  if (offset > 0 && offset >= total) return { kind: 'out-of-range' };
  const length = Math.min(size, total - offset);
  return { kind: 'block', num, size, offset, length, more: offset + length < total };
}

/**
 * The manifest's chunk over CoAP. docs/protocol.md, "Block2 downloads": `chunk_size` is the Block2 size a device
 * should request, so the configured `manifest.chunk_size` (an HTTP Range length, 64 KiB by
 * default) is brought down to the largest Block2 size not above it; `total_chunks` follows.
 */
export function coapChunkSize(configured: number): number {
  return largestBlockWithin(configured);
}
