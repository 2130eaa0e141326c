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
// one go, counted as `report_overflow`. `known` (device → version hash last written) is an LRU
// bounded by entry count, so it is a fixed budget too.

export type DropReason = 'last_seen' | 'new_device' | 'report_overflow';
type Klass = 'seen' | 'first' | 'change';

/** Rough bytes a pending heartbeat holds on the V8 heap: strings are UTF-16, plus object overhead. */
export function heartbeatBytes(r: HeartbeatRecord): number {
  return 160 + 2 * (r.deviceId.length + r.versionHash.length + r.version.length + r.artifact.length + r.hwArch.length + r.hwOs.length);
}

export function reportBytes(r: ReportRecord): number {
  return 140 + 2 * (r.deviceId.length + r.previousHash.length + r.newHash.length + r.rollbackReason.length);
}

/** Bytes one `known` entry costs (a Map entry, the id and the hash). */
const KNOWN_ENTRY_BYTES = 96 + 2 * 64;

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
  private heartbeatBytesTotal = 0;
  readonly dropped: Record<DropReason, number> = { last_seen: 0, new_device: 0, report_overflow: 0 };

  /** `knownBytes` bounds the device → version map with which updates are classified. */
  constructor(readonly budgetBytes: number, knownBytes = budgetBytes) {
    this.knownLimit = Math.max(1, Math.floor(knownBytes / (KNOWN_ENTRY_BYTES + 2 * 32)));
  }

  get bytes(): number {
    return this.heartbeatBytesTotal + this.reportBytesTotal;
  }

  get pendingHeartbeats(): number {
    return this.queues.seen.size + this.queues.first.size + this.queues.change.size;
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
      this.known.delete(r.deviceId);
      this.known.set(r.deviceId, r.versionHash);
    }
    while (this.known.size > this.knownLimit) this.known.delete(this.known.keys().next().value as string);
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
      const victim = this.oldest(this.queues.seen) ?? this.oldest(this.queues.first);
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

  private oldest(queue: Map<string, Pending>): Pending | undefined {
    const first = queue.values().next();
    return first.done ? undefined : first.value;
  }
}
