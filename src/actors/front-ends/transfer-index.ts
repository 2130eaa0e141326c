import type { TransferInfo } from '../../messages/store.js';
import { DEFAULT_DELTA_FORMAT, type DeltaFormat } from '../../shared/delta-formats.js';

/**
 * What the index adds to a snapshot's weight in a front-end, per transfer: a slot in its
 * source's list, and its share of that list and of the map entry that holds it.
 */
export const TRANSFER_INDEX_BYTES = 64;

/**
 * A snapshot's finished transfers as a heartbeat looks them up: deltas by their source hash,
 * full files by their target. The snapshot keys them by one text (transferKey); building that
 * text for every heartbeat that asks for a delta, and hashing its 131 characters, cost 0.7 to
 * 0.9 µs a lookup, where a lookup by the heartbeat's own hash string costs about 0.2
 * (bench/results/2026-11-30-validation-memo.md). A source has a transfer per target a track
 * serves and per patch format: its list is short, and read in order.
 */
export class TransferIndex {
  private readonly deltasBySource = new Map<string, TransferInfo[]>();
  private readonly fullsByTarget = new Map<string, TransferInfo>();

  constructor(transfers: Iterable<TransferInfo>) {
    for (const t of transfers) {
      if (t.kind === 'full') this.fullsByTarget.set(t.to, t);
      else if (t.from !== undefined) {
        const list = this.deltasBySource.get(t.from);
        if (list) list.push(t);
        else this.deltasBySource.set(t.from, [t]);
      }
    }
  }

  delta(from: string, to: string, format: DeltaFormat = DEFAULT_DELTA_FORMAT): TransferInfo | undefined {
    const list = this.deltasBySource.get(from);
    if (list === undefined) return undefined;
    for (const t of list) if (t.to === to && (t.format ?? DEFAULT_DELTA_FORMAT) === format) return t;
    return undefined;
  }

  full(to: string): TransferInfo | undefined {
    return this.fullsByTarget.get(to);
  }
}
