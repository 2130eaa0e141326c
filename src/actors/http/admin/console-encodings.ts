import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from 'node:zlib';

// The console's compressed encodings. Brotli at quality 11 over the 95 KiB bundle costs the
// HTTP actor about half a second of CPU, on the path of every server start, so
// `npm run build` (console/build.js) writes `<file>.br` and `<file>.gz` beside each file with
// these same settings, and the server takes them once they decompress to the file's bytes
// (a stale or damaged one is made again at start, as when none was written).

export interface Encodings {
  readonly br: Buffer;
  readonly gzip: Buffer;
}

export function compressConsoleFile(body: Buffer): Encodings {
  return {
    br: brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }),
    gzip: gzipSync(body, { level: 9 }),
  };
}

/** The build's encodings of `body` if both decompress to it, else undefined. */
export function checkedEncodings(body: Buffer, br: Buffer | undefined, gzip: Buffer | undefined): Encodings | undefined {
  if (!br || !gzip) return undefined;
  try {
    // A file from disk: never inflate more than one byte past what it must equal.
    const limit = { maxOutputLength: body.length + 1 };
    return brotliDecompressSync(br, limit).equals(body) && gunzipSync(gzip, limit).equals(body) ? { br, gzip } : undefined;
  } catch {
    return undefined;
  }
}
