import { open, type FileHandle } from 'node:fs/promises';
import type { decompress as Decompress } from '@mongodb-js/zstd';

// @mongodb-js/zstd decompresses whole buffers only. The server writes its zstd streams as
// concatenated frames of at most 8 MiB of input each (a valid single stream for `zstd -d`),
// so the agent (applying an update) and the store (verifying a file at start) walk the frame
// headers (RFC 8878 §3.1) and decompress one frame at a time: memory stays at one compressed
// frame plus its output, whatever the file size.

/**
 * The binding, loaded when the first frame is decompressed: loading it calls
 * process.report.getReport() (to tell glibc from musl), 13 to 19 ms of the agent's 0.27 s start
 * here, for a process that may never decompress anything (an agent finding no update).
 */
let decompressFrame: typeof Decompress | undefined;
async function decompress(frame: Buffer): Promise<Buffer> {
  decompressFrame ??= (await import('@mongodb-js/zstd')).decompress;
  return decompressFrame(frame);
}

const ZSTD_MAGIC = 0xfd2fb528;
const SKIPPABLE_MASK = 0xfffffff0;
const SKIPPABLE_MAGIC = 0x184d2a50;
/** Frames larger than this (compressed or declared content) are refused, not allocated. */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

/** Thrown for a stream that is not well formed; callers turn it into their own error code. */
export class ZstdStreamError extends Error {
  override readonly name = 'ZstdStreamError';
}

function corrupt(why: string): never {
  throw new ZstdStreamError(`the zstd stream is malformed: ${why}`);
}

async function readExact(handle: FileHandle, length: number, position: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  const { bytesRead } = await handle.read(buffer, 0, length, position);
  if (bytesRead !== length) corrupt(`truncated at byte ${position}`);
  return buffer;
}

/** Length in bytes of the frame that starts at `position`, and whether it carries data. */
async function frameLength(handle: FileHandle, position: number): Promise<{ length: number; skippable: boolean }> {
  const magic = (await readExact(handle, 4, position)).readUInt32LE(0);
  if ((magic & SKIPPABLE_MASK) >>> 0 === SKIPPABLE_MAGIC) {
    return { length: 8 + (await readExact(handle, 4, position + 4)).readUInt32LE(0), skippable: true };
  }
  if (magic !== ZSTD_MAGIC) corrupt(`no frame magic at byte ${position}`);
  const descriptor = (await readExact(handle, 1, position + 4))[0]!;
  const fcsFlag = descriptor >> 6;
  const singleSegment = (descriptor >> 5) & 1;
  const hasChecksum = (descriptor >> 2) & 1;
  const dictionaryBytes = [0, 1, 2, 4][descriptor & 3]!;
  const contentSizeBytes = [singleSegment ? 1 : 0, 2, 4, 8][fcsFlag]!;
  const headerBytes = 5 + (singleSegment ? 0 : 1) + dictionaryBytes;
  if (contentSizeBytes > 0) {
    const field = await readExact(handle, contentSizeBytes, position + headerBytes);
    const declared = contentSizeBytes === 8 ? Number(field.readBigUInt64LE(0))
      : field.readUIntLE(0, contentSizeBytes) + (contentSizeBytes === 2 ? 256 : 0);
    if (declared > MAX_FRAME_BYTES) corrupt(`a frame declares ${declared} bytes, more than ${MAX_FRAME_BYTES}`);
  }
  let offset = position + headerBytes + contentSizeBytes;
  for (;;) {
    const header = (await readExact(handle, 3, offset)).readUIntLE(0, 3);
    const last = header & 1;
    const type = (header >> 1) & 3;
    const size = header >>> 3;
    if (type === 3) corrupt(`reserved block type at byte ${offset}`);
    offset += 3 + (type === 1 ? 1 : size);
    if (offset - position > MAX_FRAME_BYTES) corrupt(`a frame is larger than ${MAX_FRAME_BYTES} bytes`);
    if (last) break;
  }
  return { length: offset + (hasChecksum ? 4 : 0) - position, skippable: false };
}

/**
 * Decompresses the zstd file at `inputPath` frame by frame, handing each frame's output to
 * `onData` in order. A truncated or malformed stream throws ZstdStreamError. Returns the
 * decompressed size.
 */
export async function forEachZstdFrame(inputPath: string, onData: (data: Buffer) => Promise<void> | void): Promise<number> {
  const input = await open(inputPath, 'r');
  try {
    const { size } = await input.stat();
    if (size === 0) corrupt('the file is empty');
    let position = 0;
    let written = 0;
    // One input buffer, grown to the largest frame, instead of a new one per frame.
    let frameBuffer = Buffer.alloc(0);
    while (position < size) {
      const { length, skippable } = await frameLength(input, position);
      if (position + length > size) corrupt(`the last frame is truncated at byte ${size}`);
      if (!skippable) {
        if (frameBuffer.length < length) frameBuffer = Buffer.alloc(length);
        const { bytesRead } = await input.read(frameBuffer, 0, length, position);
        if (bytesRead !== length) corrupt(`truncated at byte ${position + bytesRead}`);
        const data = await decompress(frameBuffer.subarray(0, length)).catch((err: Error) => corrupt(err.message));
        await onData(data);
        written += data.length;
      }
      position += length;
    }
    return written;
  } finally {
    await input.close();
  }
}
