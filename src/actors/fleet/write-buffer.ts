import type { HeartbeatRecord, ReportRecord } from '../../messages/fleet.js';

// The inventory's pending writes, under a byte budget (fleet.buffer_mb). Heartbeats of one
// device coalesce: only the newest is kept. Each pending heartbeat is in one of three queues,
// oldest first, and a full budget drops in this order:
//
//   seen    the device's known version, unchanged: only last_seen would move   ← dropped first
//   first   a device this buffer has not seen written yet (maybe new, maybe evicted from
//           `known`): dropped only when no `seen` is left, so a flood of random ids
//           cannot grow memory
//   change  a known device on another version: never dropped
//
// Reports are never dropped while the budget holds any heartbeat to drop instead; only when
// reports alone fill the whole budget (the database has been down for long) does the oldest
// one go, counted as `report_overflow`. `known` (device → version hash last written, the hash
// strings shared) is bounded by entry count, forgetting first the device whose entry changed
// longest ago, so it is a fixed budget too.

export type DropReason = 'last_seen' | 'new_device' | 'report_overflow';
type Klass = 'seen' | 'first' | 'change';

/** Rough bytes a pending heartbeat holds on the V8 heap: strings are UTF-16, plus object overhead. */
export function heartbeatBytes(r: HeartbeatRecord): number {
  return 160 + 2 * (r.deviceId.length + r.versionHash.length + r.version.length + r.artifact.length + r.hwArch.length + r.hwOs.length);
}

export function reportBytes(r: ReportRecord): number {
  return 140 + 2 * (r.deviceId.length + r.previousHash.length + r.newHash.length + r.rollbackReason.length);
}

/**
 * Bytes one `known` entry is counted for: measured 70 bytes with a 12-character device id and
 * 93 with a 36-character one (the Map's slots and the id; the hash string is shared), plus
 * room for the Map's table, which grows by doubling.
 */
const KNOWN_ENTRY_BYTES = 160;
/** Distinct version hashes shared by `known` before that little table starts over. */
const SHARED_HASHES = 1024;

interface Pending {
  record: HeartbeatRecord;
  klass: Klass;
  bytes: number;
}

export interface Taken {
  heartbeats: HeartbeatRecord[];
  reports: ReportRecord[];
}

export class WriteBuffer {
  private readonly queues: Record<Klass, Map<string, Pending>> = { seen: new Map(), first: new Map(), change: new Map() };
  private reports: ReportRecord[] = [];
  private reportBytesTotal = 0;
  private readonly known = new Map<string, string>();
  private readonly knownLimit: number;
  private readonly hashes = new Map<string, string>();
  private readonly cursors: Partial<Record<'seen' | 'first', Iterator<Pending>>> = {};
  private heartbeatBytesTotal = 0;
  readonly dropped: Record<DropReason, number> = { last_seen: 0, new_device: 0, report_overflow: 0 };

  /** `knownBytes` bounds the device → version map with which updates are classified. */
  constructor(readonly budgetBytes: number, knownBytes = budgetBytes) {
    this.knownLimit = Math.max(1, Math.floor(knownBytes / KNOWN_ENTRY_BYTES));
  }

  get bytes(): number {
    return this.heartbeatBytesTotal + this.reportBytesTotal;
  }

  get pendingHeartbeats(): number {
    return this.queues.seen.size + this.queues.first.size + this.queues.change.size;
  }

  /** Devices whose written version the buffer remembers (bounded by the `known` budget). */
  get knownDevices(): number {
    return this.known.size;
  }

  get pendingReports(): number {
    return this.reports.length;
  }

  /** Receipt time of the oldest pending record, or undefined when nothing is pending. */
  oldestReceivedAtMs(): number | undefined {
    let oldest: number | undefined;
    for (const queue of Object.values(this.queues)) {
      const first = queue.values().next();
      if (!first.done && (oldest === undefined || first.value.record.receivedAtMs < oldest)) oldest = first.value.record.receivedAtMs;
    }
    const report = this.reports[0];
    if (report && (oldest === undefined || report.receivedAtMs < oldest)) oldest = report.receivedAtMs;
    return oldest;
  }

  addHeartbeat(record: HeartbeatRecord): void {
    const previous = this.remove(record.deviceId);
    const knownHash = this.known.get(record.deviceId);
    let klass: Klass;
    if (previous?.klass === 'change' || (previous && previous.record.versionHash !== record.versionHash)) klass = 'change';
    else if (knownHash === undefined) klass = 'first';
    else klass = knownHash === record.versionHash ? 'seen' : 'change';
    const bytes = heartbeatBytes(record);
    this.queues[klass].set(record.deviceId, { record, klass, bytes });
    this.heartbeatBytesTotal += bytes;
    this.enforceBudget();
  }

  addReport(report: ReportRecord): void {
    this.reports.push(report);
    this.reportBytesTotal += reportBytes(report);
    this.enforceBudget();
  }

  /** Everything pending, oldest first; the buffer is empty afterwards. */
  take(): Taken {
    const heartbeats: HeartbeatRecord[] = [];
    for (const queue of Object.values(this.queues)) {
      for (const pending of queue.values()) heartbeats.push(pending.record);
      queue.clear();
    }
    delete this.cursors.seen;
    delete this.cursors.first;
    const reports = this.reports;
    this.reports = [];
    this.heartbeatBytesTotal = 0;
    this.reportBytesTotal = 0;
    return { heartbeats, reports };
  }

  /** A flush failed: its records go back, unless a newer heartbeat of the device came in since. */
  putBack(taken: Taken): void {
    for (const record of taken.heartbeats) {
      if (!this.pendingFor(record.deviceId)) this.addHeartbeat(record);
    }
    const newer = this.reports;
    this.reports = [];
    this.reportBytesTotal = 0;
    for (const report of [...taken.reports, ...newer]) this.addReport(report);
  }

  /** A flush committed: these devices are now known at these versions. */
  written(heartbeats: readonly HeartbeatRecord[]): void {
    for (const r of heartbeats) {
      // Only a device new to the map or on another version moves: the oldest entry is then the
      // one known longest without a change, and a steady heartbeat costs one lookup here.
      if (this.known.get(r.deviceId) === r.versionHash) continue;
      this.known.delete(r.deviceId);
      this.known.set(r.deviceId, this.shared(r.versionHash));
    }
    // One pass from the oldest: a fresh keys() iterator per eviction would walk the holes the
    // earlier deletions left at the front of the Map, again and again.
    let excess = this.known.size - this.knownLimit;
    if (excess <= 0) return;
    for (const id of this.known.keys()) {
      this.known.delete(id);
      if (--excess === 0) break;
    }
  }

  /** One string per version hash for all the devices on it. */
  private shared(hash: string): string {
    const known = this.hashes.get(hash);
    if (known !== undefined) return known;
    if (this.hashes.size >= SHARED_HASHES) this.hashes.clear();
    this.hashes.set(hash, hash);
    return hash;
  }

  private pendingFor(deviceId: string): Pending | undefined {
    return this.queues.seen.get(deviceId) ?? this.queues.first.get(deviceId) ?? this.queues.change.get(deviceId);
  }

  private remove(deviceId: string): Pending | undefined {
    const pending = this.pendingFor(deviceId);
    if (pending) {
      this.queues[pending.klass].delete(deviceId);
      this.heartbeatBytesTotal -= pending.bytes;
    }
    return pending;
  }

  private enforceBudget(): void {
    while (this.bytes > this.budgetBytes) {
      const victim = this.oldest('seen') ?? this.oldest('first');
      if (victim) {
        this.remove(victim.record.deviceId);
        this.dropped[victim.klass === 'seen' ? 'last_seen' : 'new_device']++;
      } else if (this.reportBytesTotal > this.budgetBytes) {
        this.reportBytesTotal -= reportBytes(this.reports.shift()!);
        this.dropped.report_overflow++;
      } else {
        return; // what is left is version changes and reports: kept
      }
    }
  }

  /**
   * The oldest pending heartbeat of a queue, read from an iterator kept between calls: a full
   * buffer drops one per heartbeat that arrives, and a fresh values() iterator each time would
   * walk every hole the earlier drops left at the front of the Map (a fleet thread spent whole
   * seconds there, the buffer full behind a slow flush). A Map iterator skips deleted entries
   * and sees entries added after it; once done it stays done, so a new one starts then.
   */
  private oldest(klass: 'seen' | 'first'): Pending | undefined {
    let next = this.cursors[klass]?.next();
    if (!next || next.done) {
      this.cursors[klass] = this.queues[klass].values();
      next = this.cursors[klass].next();
    }
    return next.done ? undefined : next.value;
  }
}
