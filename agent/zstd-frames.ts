import type { FileHandle } from 'node:fs/promises';
import { writeFully } from '../src/shared/durable-file.js';
import { UpdaterError } from '../src/shared/errors.js';
import { ZstdStreamError, forEachZstdFrame } from '../src/shared/zstd-frames.js';

export { MAX_FRAME_BYTES } from '../src/shared/zstd-frames.js';

/**
 * Decompresses the zstd file at `inputPath` frame by frame into `output` (from its current
 * end), calling `afterFrame` after each written frame. Returns the decompressed size.
 */
export async function decompressFileInto(inputPath: string, output: FileHandle, afterFrame?: () => void): Promise<number> {
  try {
    return await forEachZstdFrame(inputPath, async (data) => {
      // Every byte or an error: a short write on a full disk would leave a truncated slot.
      await writeFully(output, data);
      afterFrame?.();
    });
  } catch (err) {
    // ENOSPC passes through: the caller names the file it was writing.
    if (err instanceof ZstdStreamError) throw new UpdaterError('AGENT_RECONSTRUCTION_MISMATCH', err.message);
    throw err;
  }
}
