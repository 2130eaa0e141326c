import type { HeartbeatRecord } from '../../../messages/fleet.js';

// The write buffer's pending heartbeats of one class, column by column (write-buffer.ts).
//
// A heartbeat waits for its flush for up to a flush interval (a second), longer than V8's
// young generation keeps an object: held as an object of its own (the record and its queue
// entry), every heartbeat was promoted to the old generation and died there, and the fleet
// thread ran a full collection every 0.7 to 0.8 s at 56,000 heartbeats a second (`--trace-gc`),
// with marking on V8's helper threads besides. Here a pending heartbeat is a slot: one element
// in each column (numbers unboxed, texts shared). The columns are kept from one flush to the
// next and written over, so after the first flushes nothing is allocated per heartbeat; past
// `length` they hold what earlier flushes left (shared texts and numbers, never an entry),
// read by nobody. The records the stores write are made at the flush, and die young.

/** What a queue needs of a device's entry: the sequence number of its pending heartbeat, and where it is. */
export interface PendingOwner {
  /** 0 when nothing is pending; a slot whose number differs is stale (replaced or dropped). */
  seq: number;
  slot: number;
}

type Transport = HeartbeatRecord['transport'];

/** A SharedField per text of a heartbeat. */
export type TextFields = Record<'versionHash' | 'version' | 'artifact' | 'hwArch' | 'hwOs', SharedField>;

export function textFields(texts: SharedTexts): TextFields {
  return {
    versionHash: new SharedField(texts), version: new SharedField(texts), artifact: new SharedField(texts),
    hwArch: new SharedField(texts), hwOs: new SharedField(texts),
  };
}

/** Slots in push order, stale ones among them until compacted(). */
export class PendingQueue<D extends PendingOwner> {
  private readonly owners: (D | undefined)[] = [];
  private readonly seqs: number[] = [];
  private readonly counted: number[] = [];
  private readonly versionHashes: string[] = [];
  private readonly versions: string[] = [];
  private readonly artifacts: string[] = [];
  private readonly hwArchs: string[] = [];
  private readonly hwOses: string[] = [];
  private readonly hwFreeRams: number[] = [];
  private readonly hwFreeDisks: number[] = [];
  private readonly receivedAt: number[] = [];
  private readonly transports: Transport[] = [];
  /** Slots in use, live and stale; the columns may be longer. */
  private count = 0;
  /** Every slot before it is stale: where the search for the oldest live one resumes. */
  private head = 0;

  /** Slots, live and stale. */
  get length(): number {
    return this.count;
  }

  /** Appends `owner`'s heartbeat as slot `owner.slot`, numbered `seq`, its texts shared through `fields` when given. */
  push(owner: D, seq: number, record: HeartbeatRecord, bytes: number, fields?: TextFields): void {
    const at = this.count++;
    owner.seq = seq;
    owner.slot = at;
    this.owners[at] = owner;
    this.seqs[at] = seq;
    this.counted[at] = bytes;
    this.versionHashes[at] = fields ? fields.versionHash.text(record.versionHash) : record.versionHash;
    this.versions[at] = fields ? fields.version.text(record.version) : record.version;
    this.artifacts[at] = fields ? fields.artifact.text(record.artifact) : record.artifact;
    this.hwArchs[at] = fields ? fields.hwArch.text(record.hwArch) : record.hwArch;
    this.hwOses[at] = fields ? fields.hwOs.text(record.hwOs) : record.hwOs;
    this.hwFreeRams[at] = record.hwFreeRam;
    this.hwFreeDisks[at] = record.hwFreeDisk;
    this.receivedAt[at] = record.receivedAtMs;
    this.transports[at] = record.transport;
  }

  isLive(slot: number): boolean {
    return this.owners[slot]!.seq === this.seqs[slot];
  }

  owner(slot: number): D {
    return this.owners[slot]!;
  }

  bytes(slot: number): number {
    return this.counted[slot]!;
  }

  versionHash(slot: number): string {
    return this.versionHashes[slot]!;
  }

  receivedAtMs(slot: number): number {
    return this.receivedAt[slot]!;
  }

  /** The heartbeat of a slot as the stores write it. */
  record(slot: number, deviceId: string): HeartbeatRecord {
    return {
      deviceId, versionHash: this.versionHashes[slot]!, version: this.versions[slot]!, artifact: this.artifacts[slot]!,
      hwArch: this.hwArchs[slot]!, hwOs: this.hwOses[slot]!, hwFreeRam: this.hwFreeRams[slot]!, hwFreeDisk: this.hwFreeDisks[slot]!,
      receivedAtMs: this.receivedAt[slot]!, transport: this.transports[slot]!,
    };
  }

  /** The first live slot, or -1; the head moves past the stale ones before it. */
  oldest(): number {
    while (this.head < this.count && !this.isLive(this.head)) this.head++;
    return this.head < this.count ? this.head : -1;
  }

  /** The first slot that may be live (take() reads from there). */
  get start(): number {
    return this.head;
  }

  /** Keeps the live slots alone, in order, in place; each owner's slot follows its heartbeat. */
  compact(): void {
    let to = 0;
    for (let from = this.head; from < this.count; from++) {
      if (!this.isLive(from)) continue;
      if (to !== from) this.move(from, to);
      this.owners[to]!.slot = to;
      to++;
    }
    this.release(to);
  }

  /** Empties the queue (its columns stay, to be written over). */
  clear(): void {
    this.release(0);
  }

  /** Ends the queue at `count` slots; the entries past it are let go (a forgotten device's must not be held). */
  private release(count: number): void {
    this.owners.fill(undefined, count, this.count);
    this.count = count;
    this.head = 0;
  }

  private move(from: number, to: number): void {
    this.owners[to] = this.owners[from]!;
    this.seqs[to] = this.seqs[from]!;
    this.counted[to] = this.counted[from]!;
    this.versionHashes[to] = this.versionHashes[from]!;
    this.versions[to] = this.versions[from]!;
    this.artifacts[to] = this.artifacts[from]!;
    this.hwArchs[to] = this.hwArchs[from]!;
    this.hwOses[to] = this.hwOses[from]!;
    this.hwFreeRams[to] = this.hwFreeRams[from]!;
    this.hwFreeDisks[to] = this.hwFreeDisks[from]!;
    this.receivedAt[to] = this.receivedAt[from]!;
    this.transports[to] = this.transports[from]!;
  }
}

/** One string per text for all the slots and entries that hold it. */
export class SharedTexts {
  private readonly texts = new Map<string, string>();

  constructor(private readonly limit: number) {}

  /**
   * Besides the memory, sharing keeps long-lived objects from pointing at each arriving
   * batch's own strings: every such pointer is a slot the next young collection must visit.
   */
  text(text: string): string {
    const known = this.texts.get(text);
    if (known !== undefined) return known;
    if (this.texts.size >= this.limit) this.texts.clear();
    this.texts.set(text, text);
    return text;
  }
}

/** SharedTexts for one field of a heartbeat, the last string in front: a batch's heartbeats mostly repeat their neighbour's. */
export class SharedField {
  private lastSeen = '';
  private lastShared = '';

  constructor(private readonly texts: SharedTexts) {}

  text(text: string): string {
    if (text === this.lastSeen) return this.lastShared;
    this.lastSeen = text;
    this.lastShared = this.texts.text(text);
    return this.lastShared;
  }
}
