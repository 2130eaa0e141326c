import { transferKey } from '../../messages/decision-snapshot.js';
import type { StoreEvent, StoreSnapshot, TransferInfo } from '../../messages/store.js';
import type { DeltaFormat } from '../../shared/delta-formats.js';
import type { StoreQuery } from '../../shared/decision/decide.js';

/**
 * The manifester's replica of the store index, fed by store-keeper events so a heartbeat
 * never waits on the store. Events are numbered: those that arrive while a snapshot is being
 * fetched are held, then applied only if newer than the snapshot.
 */
export class StoreView implements StoreQuery<TransferInfo> {
  private readonly binaries = new Map<string, number>();
  private readonly transfers = new Map<string, TransferInfo>();
  private seq = -1;
  private held: StoreEvent[] | undefined = [];

  /** `changed` is told after every change of the index: the front-ends' snapshots carry it. */
  constructor(private readonly onRemoved: (transfer: TransferInfo) => void, private readonly changed: () => void = () => undefined) {}

  binarySize(hash: string): number | undefined {
    return this.binaries.get(hash);
  }

  delta(from: string, to: string, format?: DeltaFormat): TransferInfo | undefined {
    return this.transfers.get(transferKey('delta', to, from, format));
  }

  full(to: string): TransferInfo | undefined {
    return this.transfers.get(transferKey('full', to));
  }

  /** The binaries by hash, with their sizes (a copy, for a snapshot). */
  binarySizes(): Map<string, number> {
    return new Map(this.binaries);
  }

  /** The finished transfers toward `targets`, by their key (for a snapshot: what it may answer). */
  transfersToward(targets: ReadonlySet<string>): Map<string, TransferInfo> {
    const toward = new Map<string, TransferInfo>();
    for (const [key, t] of this.transfers) if (targets.has(t.to)) toward.set(key, t);
    return toward;
  }

  /** Start of a resynchronization: hold events until the snapshot arrives. */
  beginResync(): void {
    this.held ??= [];
  }

  applySnapshot(snapshot: StoreSnapshot): void {
    for (const t of this.transfers.values()) this.onRemoved(t);
    this.binaries.clear();
    this.transfers.clear();
    for (const b of snapshot.binaries) this.binaries.set(b.hash, b.size);
    for (const t of snapshot.transfers) this.transfers.set(keyOf(t), t);
    this.seq = snapshot.seq;
    const held = this.held ?? [];
    this.held = undefined;
    for (const event of held) this.apply(event);
    this.changed();
  }

  apply(event: StoreEvent): void {
    if (this.held) {
      this.held.push(event);
      return;
    }
    if (event.seq <= this.seq) return;
    this.seq = event.seq;
    switch (event.type) {
      case 'binary-registered':
        this.binaries.set(event.binary.hash, event.binary.size);
        break;
      case 'binary-removed':
        this.binaries.delete(event.hash);
        break;
      case 'transfer-ready':
        this.transfers.set(keyOf(event.transfer), event.transfer);
        break;
      case 'transfer-removed':
        this.transfers.delete(keyOf(event.transfer));
        this.onRemoved(event.transfer);
        break;
    }
    this.changed();
  }
}

/** Each format of a pair is a transfer of its own; bsdiff40's key is the one it always had. */
function keyOf(t: TransferInfo): string {
  return transferKey(t.kind, t.to, t.from, t.format);
}
