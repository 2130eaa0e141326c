import { open } from 'node:fs/promises';
import type { TransferKind, TransferLocation } from '../../messages/store.js';
import { UpdaterError } from '../../shared/errors.js';
import { CountLru } from '../../shared/lru.js';

// A device downloads a transfer as hundreds of small blocks, one request each. Asking the
// store-keeper where the file lives for every block would put a cross-thread call on each,
// so locations are remembered briefly. Files are immutable and content-addressed: a remembered
// path stays valid until retention removes it, which a read notices (ENOENT) and forgets.
// A remembered location from the hot cache pins its shared memory, so entries are few and
// short-lived: the pinned bytes are at most LOCATION_ENTRIES files for LOCATION_TTL_MS.

const LOCATION_ENTRIES = 64;
const LOCATION_TTL_MS = 2_000;

export type Locate = (kind: TransferKind, to: string, from: string | undefined) => Promise<TransferLocation | null>;

export class TransferReader {
  private readonly locations = new CountLru<string, { location: TransferLocation; until: number }>(LOCATION_ENTRIES);

  constructor(private readonly locate: Locate) {}

  /** The finished transfer, or DELTA_NOT_FOUND / BINARY_NOT_FOUND. */
  async find(kind: TransferKind, to: string, from: string | undefined): Promise<TransferLocation> {
    const key = `${kind}/${from ?? ''}/${to}`;
    const cached = this.locations.get(key);
    if (cached && cached.until > Date.now()) return cached.location;
    const location = await this.locate(kind, to, from);
    if (!location) {
      this.locations.delete(key);
      throw notFound(kind);
    }
    this.locations.set(key, { location, until: Date.now() + LOCATION_TTL_MS });
    return location;
  }

  /** Reads `length` bytes at `offset` from shared memory or the file; never more than one block. */
  async read(location: TransferLocation, offset: number, length: number): Promise<Buffer> {
    if (length === 0) return Buffer.alloc(0);
    if (location.shared) return Buffer.from(new Uint8Array(location.shared, offset, length));
    let handle;
    try {
      handle = await open(location.path, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // Removed by retention since it was located: the transfer is gone.
      this.locations.delete(`${location.kind}/${location.from ?? ''}/${location.to}`);
      throw notFound(location.kind);
    }
    try {
      const buffer = Buffer.allocUnsafe(length);
      let filled = 0;
      while (filled < length) {
        const { bytesRead } = await handle.read(buffer, filled, length - filled, offset + filled);
        if (bytesRead === 0) throw new UpdaterError('STORE_CORRUPT', `${location.path} is shorter than its recorded size`);
        filled += bytesRead;
      }
      return buffer;
    } finally {
      await handle.close();
    }
  }
}

function notFound(kind: TransferKind): UpdaterError {
  return new UpdaterError(kind === 'delta' ? 'DELTA_NOT_FOUND' : 'BINARY_NOT_FOUND');
}
