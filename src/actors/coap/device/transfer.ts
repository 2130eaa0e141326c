import type { TransferKind, TransferLocation } from '../../../messages/store.js';
import type { DeltaFormat } from '../../../shared/delta-formats.js';
import { UpdaterError } from '../../../shared/errors.js';
import type { TransferLocator } from '../../front-ends/transfer-locator.js';
import { OpenFiles } from './open-files.js';

// Reads a located transfer's bytes for one Block2 answer. Where it lives is the
// TransferLocator's business (shared with the HTTP front-end).

export class TransferReader {
  /** Files of transfers being downloaded, kept open between their blocks. */
  readonly files = new OpenFiles();

  constructor(readonly locator: TransferLocator) {}

  find(kind: TransferKind, to: string, from: string | undefined, format?: DeltaFormat): Promise<TransferLocation> {
    return this.locator.find(kind, to, from, format);
  }

  /** Reads `length` bytes at `offset` from shared memory or the file; never more than one block. */
  async read(location: TransferLocation, offset: number, length: number): Promise<Buffer> {
    if (length === 0) return Buffer.alloc(0);
    if (location.shared) return Buffer.from(new Uint8Array(location.shared, offset, length));
    try {
      return await this.files.use(location.path, async (handle) => {
        const buffer = Buffer.allocUnsafe(length);
        let filled = 0;
        while (filled < length) {
          const { bytesRead } = await handle.read(buffer, filled, length - filled, offset + filled);
          if (bytesRead === 0) throw new UpdaterError('STORE_CORRUPT', `${location.path} is shorter than its recorded size`);
          filled += bytesRead;
        }
        return buffer;
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // Removed by retention since it was located: the transfer is gone.
      throw this.locator.gone(location);
    }
  }
}
