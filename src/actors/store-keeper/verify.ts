import { createHash } from 'node:crypto';
import { mkdir, open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { sha256File } from '../../shared/hash.js';
import type { Logger } from '../../shared/logger.js';
import { ZstdStreamError, forEachZstdFrame } from '../../shared/zstd-frames.js';
import type { ParsedDerivedName } from '../../shared/store-layout.js';

// A file enters the index only if its bytes fit its name. Binaries are named by the SHA-256 of
// their bytes. Derived files are named by what they rebuild: a full file must decompress to its
// target; a delta must be a complete zstd stream holding a complete bsdiff patch whose declared
// output size is the target's; a bsdiff-lzma delta (stored as served) must have the header of
// its format naming the target's size and stream lengths adding up to the file, its last xz
// stream ending in the xz footer magic. (Proving a delta fully means running bspatch against its source:
// the diff pool does that before a delta is ever published; here we catch files cut short.)

/** Why a file does not fit its name; undefined when it does. */
export type Mismatch = string | undefined;

export async function binaryMismatch(path: string, hash: string): Promise<Mismatch> {
  const actual = await sha256File(path);
  return actual.hash === hash ? undefined : `its bytes (${actual.size}) hash to ${actual.hash}`;
}

/**
 * Checks a derived file against its name and returns its wire hash and size, or why it does
 * not fit. `targetSize` is the size of the target binary when the store holds it.
 */
export async function derivedCheck(path: string, parsed: ParsedDerivedName, targetSize: number | undefined): Promise<{ hash: string; size: number } | { mismatch: string }> {
  const wire = await sha256File(path);
  try {
    if (parsed.kind === 'full') {
      const content = createHash('sha256');
      const size = await forEachZstdFrame(path, (data) => void content.update(data));
      const hash = content.digest('hex');
      if (hash !== parsed.to) return { mismatch: `it decompresses to ${size} bytes hashing to ${hash}` };
    } else {
      const problem = parsed.format === 'bsdiff-lzma' ? await lzmaPatchProblem(path, wire.size, targetSize) : await patchProblem(path, targetSize);
      if (problem) return { mismatch: problem };
    }
  } catch (err) {
    if (err instanceof ZstdStreamError) return { mismatch: err.message };
    throw err;
  }
  return wire;
}

/** Reads a bsdiff "BSDIFF40" offset: 8 bytes little-endian, sign in the top bit. */
function offtin(buffer: Buffer, at: number): number {
  const magnitude = Number(buffer.readBigUInt64LE(at) & 0x7fffffffffffffffn);
  return buffer[at + 7]! & 0x80 ? -magnitude : magnitude;
}

const BSDIFF_MAGIC = 'BSDIFF40';
const HEADER_BYTES = 32;
/** The smallest complete bzip2 stream (an empty one) is 14 bytes. */
const MIN_BZIP2_BYTES = 14;

async function patchProblem(path: string, targetSize: number | undefined): Promise<Mismatch> {
  let header: Buffer | undefined;
  let extraStart = -1;
  let extraMagic = '';
  let seen = 0;
  const total = await forEachZstdFrame(path, (data) => {
    if (!header || header.length < HEADER_BYTES) header = Buffer.concat([header ?? Buffer.alloc(0), data.subarray(0, HEADER_BYTES)]);
    if (extraStart < 0 && header.length >= HEADER_BYTES) extraStart = HEADER_BYTES + offtin(header, 8) + offtin(header, 16);
    while (extraStart >= 0 && extraMagic.length < 3) {
      const at = extraStart + extraMagic.length - seen;
      if (at < 0 || at >= data.length) break;
      extraMagic += String.fromCharCode(data[at]!);
    }
    seen += data.length;
  });
  if (!header || header.length < HEADER_BYTES || header.subarray(0, 8).toString('latin1') !== BSDIFF_MAGIC) return 'it is not a bsdiff patch';
  const newSize = offtin(header, 24);
  if (targetSize !== undefined && newSize !== targetSize) return `the patch builds ${newSize} bytes, the target has ${targetSize}`;
  if (extraStart < HEADER_BYTES || total < extraStart + MIN_BZIP2_BYTES || !extraMagic.startsWith('BZh')) return `the patch is cut short (${total} bytes)`;
  return undefined;
}

const LZMA_MAGIC = 'BSDLZMA1';
const LZMA_HEADER_BYTES = 40;

async function lzmaPatchProblem(path: string, size: number, targetSize: number | undefined): Promise<Mismatch> {
  if (size < LZMA_HEADER_BYTES + 2) return `the patch is cut short (${size} bytes)`;
  const handle = await open(path, 'r');
  const header = Buffer.alloc(LZMA_HEADER_BYTES);
  const footer = Buffer.alloc(2);
  try {
    await handle.read(header, 0, LZMA_HEADER_BYTES, 0);
    await handle.read(footer, 0, 2, size - 2);
  } finally {
    await handle.close();
  }
  if (header.subarray(0, 8).toString('latin1') !== LZMA_MAGIC) return 'it is not a bsdiff-lzma patch';
  const newSize = Number(header.readBigUInt64LE(8));
  if (targetSize !== undefined && newSize !== targetSize) return `the patch builds ${newSize} bytes, the target has ${targetSize}`;
  const streams = header.readBigUInt64LE(16) + header.readBigUInt64LE(24) + header.readBigUInt64LE(32);
  if (streams + BigInt(LZMA_HEADER_BYTES) !== BigInt(size) || footer.toString('latin1') !== 'YZ') return `the patch is cut short (${size} bytes)`;
  return undefined;
}

/**
 * Moves a file that does not fit its name out of the served directories into
 * `{store}/quarantine/`, for an operator to look at. On a read-only store it stays where it
 * is; either way the caller leaves it out of the index, so it is never served or signed.
 */
export async function quarantine(storeDir: string, dir: string, name: string, why: string, log: Logger): Promise<void> {
  const aside = join(storeDir, 'quarantine');
  const target = join(aside, `${name}.${Date.now()}`);
  try {
    await mkdir(aside, { recursive: true });
    await rename(join(dir, name), target);
    log.error({ file: name, why, moved_to: target }, 'a stored file does not fit its name; moved aside, never served');
  } catch (err) {
    log.error({ file: name, why, err }, 'a stored file does not fit its name; it could not be moved aside, and is left out of the index');
  }
}
