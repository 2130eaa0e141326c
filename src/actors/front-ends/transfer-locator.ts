import type { TransferKind, TransferLocation } from '../../messages/store.js';
import type { DeltaFormat } from '../../shared/delta-formats.js';
import { UpdaterError } from '../../shared/errors.js';
import { CountLru } from '../../shared/lru.js';
import type { ActorContext } from '../runtime.js';

// Where a transfer lives, as both front-ends ask it. A device downloads a transfer as many
// requests (CoAP blocks, HTTP ranges after a resume); asking the store-keeper for every one
// would put a cross-thread call on each, so locations are remembered briefly. Files are
// immutable and content-addressed: a remembered path stays valid until retention removes it,
// which a read notices (ENOENT) and reports through `gone`. A remembered location from the
// hot cache pins its shared memory, so entries are few and short-lived: the pinned bytes are
// at most LOCATION_ENTRIES files for LOCATION_TTL_MS.

const LOCATION_ENTRIES = 64;
const LOCATION_TTL_MS = 2_000;

export type Locate = (kind: TransferKind, to: string, from: string | undefined, format?: DeltaFormat) => Promise<TransferLocation | null>;

export class TransferLocator {
  private readonly locations = new CountLru<string, { location: TransferLocation; until: number }>(LOCATION_ENTRIES);

  constructor(private readonly locate: Locate, private readonly now: () => number = Date.now) {}

  /** Asks the store-keeper through the actor's peer link. */
  static of(ctx: ActorContext): TransferLocator {
    return new TransferLocator((kind, to, from, format) => ctx.call('store-keeper', (s) => s.locate(kind, to, from, format)));
  }

  /** The finished transfer, or DELTA_NOT_FOUND / BINARY_NOT_FOUND. */
  async find(kind: TransferKind, to: string, from: string | undefined, format?: DeltaFormat): Promise<TransferLocation> {
    const key = locationKey(kind, to, from, format);
    const cached = this.locations.get(key);
    if (cached && cached.until > this.now()) return cached.location;
    // bsdiff40 is asked for as before (no format argument), so a store of old answers the same.
    const location = await (format === undefined || format === 'bsdiff40' ? this.locate(kind, to, from) : this.locate(kind, to, from, format));
    if (!location) {
      this.locations.delete(key);
      throw notFound(kind);
    }
    this.locations.set(key, { location, until: this.now() + LOCATION_TTL_MS });
    return location;
  }

  /** A located file was removed since (retention): forgets it; the error to answer. */
  gone(location: TransferLocation): UpdaterError {
    this.locations.delete(locationKey(location.kind, location.to, location.from, location.format));
    return notFound(location.kind);
  }
}

function locationKey(kind: TransferKind, to: string, from: string | undefined, format: DeltaFormat | undefined): string {
  return format === undefined || format === 'bsdiff40' ? `${kind}/${from ?? ''}/${to}` : `${kind}/${from ?? ''}/${to}/${format}`;
}

function notFound(kind: TransferKind): UpdaterError {
  return new UpdaterError(kind === 'delta' ? 'DELTA_NOT_FOUND' : 'BINARY_NOT_FOUND');
}
