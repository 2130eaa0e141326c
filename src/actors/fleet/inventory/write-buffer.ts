import type { HeartbeatRecord, ReportRecord } from '../../../messages/fleet.js';
import { PendingQueue, SharedTexts, textFields } from './pending-queue.js';

// The inventory's pending writes, under a byte budget (fleet.buffer_mb). Heartbeats of one
// device coalesce: only the newest is kept. Each pending heartbeat is in one of three queues,
// oldest first, and a full budget drops in this order:
//
//   seen    the device's known version, unchanged: only last_seen would move   ← dropped first
//   first   a device whose written version the buffer does not remember (new, forgotten,
//           or never admitted to a full memory): dropped only when no `seen` is left, so a
//           flood of random ids cannot grow memory
//   change  a known device on another version: never dropped
//
// Reports are never dropped while the budget holds any heartbeat to drop instead; only when
// reports alone fill the whole budget (the database has been down for long) does the oldest
// one go, counted as `report_overflow`. What the buffer remembers of each device (the version
// hash last written, the hash strings shared) is bounded by entry count, forgetting first the
// device whose entry changed longest ago, so it is a fixed budget too. Once that memory is
// full, only one device new to it in ADMIT_EVERY takes the place of the oldest: devices check
// in in turn, so in a fleet larger than the memory, admitting every one would forget each
// device just before it checks in again (none remembered, every heartbeat a first sighting),
// where admitting a few keeps most of the fleet remembered, and slows a flood of invented
// ids pushing real devices out.
//
// One Map lookup per heartbeat: a device's entry holds both what was last written and its
// pending heartbeat, and the three queues are arrays. At tens of thousands of heartbeats a
// second from a hundred thousand devices, the six lookups of separate maps (each a cache miss
// in a large table) were the fleet thread's largest single cost after SQLite. A heartbeat that
// replaces a pending one, or one that is dropped, leaves its slot behind in its queue (stale:
// its device's entry no longer points at it); a queue is compacted once the stale slots hold
// an eighth of the budget, so they are bounded too. A queue holds its heartbeats column by
// column, nothing allocated per heartbeat that lives until the flush (pending-queue.ts).

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
 * Bytes one remembered device is counted for: measured 181 bytes with a 12-character device id
 * and 205 with a 36-character one (its entry object, the Map's slots and the id; the hash
 * string is shared), plus room for the Map's table, which grows by doubling. (A bare hash per
 * device, before the entry object, was 70 to 96 bytes: the one lookup costs that memory. The
 * entry's place in its queue, instead of a pending object, added 17 to 18 bytes.)
 */
export const KNOWN_ENTRY_BYTES = 224;
/** Once the device memory is full, one device new to it in this many is remembered (see above). */
export const ADMIT_EVERY = 8;
/** Distinct texts (hashes, versions, tracks, hardware) shared by the buffer before that little table starts over. */
const SHARED_TEXTS = 1024;
const KLASSES = ['seen', 'first', 'change'] as const;

/** What the buffer holds for one device: what was written last, and where its pending heartbeat is. */
interface Device {
  readonly id: string;
  /** The version hash last written for it, or undefined when none was (or it was forgotten). */
  written: string | undefined;
  /** Set once the entry has left the map: a flush that ends later must not count it again. */
  forgotten: boolean;
  /** The pending heartbeat: its number (0 when none), class and slot in that class's queue. */
  seq: number;
  klass: Klass;
  slot: number;
}

export interface Taken {
  heartbeats: HeartbeatRecord[];
  reports: ReportRecord[];
  /** The entries of `heartbeats`, same order, so that `written` needs no lookups. */
  readonly devices: readonly Device[];
}

export class WriteBuffer {
  private readonly devices = new Map<string, Device>();
  /** Pending heartbeats per class, oldest first, stale slots among them (see above). */
  private readonly queues: Record<Klass, PendingQueue<Device>> = { seen: new PendingQueue(), first: new PendingQueue(), change: new PendingQueue() };
  /** The last number given to a pending heartbeat. */
  private seq = 0;
  private readonly live: Record<Klass, number> = { seen: 0, first: 0, change: 0 };
  private staleBytes = 0;
  private reports: ReportRecord[] = [];
  private reportBytesTotal = 0;
  /** Entries with a `written` hash; the map also holds devices only pending. */
  private remembered = 0;
  private readonly knownLimit: number;
  /** Devices refused by the full memory since the last one admitted. */
  private refusedSinceAdmit = 0;
  private readonly texts = new SharedTexts(SHARED_TEXTS);
  private readonly fields = textFields(this.texts);
  private heartbeatBytesTotal = 0;
  readonly dropped: Record<DropReason, number> = { last_seen: 0, new_device: 0, report_overflow: 0 };

  /**
   * `knownBytes` bounds the device → version memory with which updates are classified;
   * `admitEvery` is ADMIT_EVERY but for tests of what the memory forgets.
   */
  constructor(readonly budgetBytes: number, knownBytes = budgetBytes, private readonly admitEvery = ADMIT_EVERY) {
    this.knownLimit = Math.max(1, Math.floor(knownBytes / KNOWN_ENTRY_BYTES));
  }

  get bytes(): number {
    return this.heartbeatBytesTotal + this.reportBytesTotal;
  }

  get pendingHeartbeats(): number {
    return this.live.seen + this.live.first + this.live.change;
  }

  /** Devices whose written version the buffer remembers (bounded by the `known` budget). */
  get knownDevices(): number {
    return this.remembered;
  }

  /** Pending heartbeats by class (what a test checks of the classification). */
  get pendingByClass(): Readonly<Record<Klass, number>> {
    return { ...this.live };
  }

  get pendingReports(): number {
    return this.reports.length;
  }

  /** Entries in the device map: remembered, pending, or in a flush under way (their bound is tested). */
  get deviceEntries(): number {
    return this.devices.size;
  }

  /** Slots in the heartbeat queues, live and stale (their bound is tested). */
  get queuedSlots(): number {
    return this.queues.seen.length + this.queues.first.length + this.queues.change.length;
  }

  /** Receipt time of the oldest pending record, or undefined when nothing is pending. */
  oldestReceivedAtMs(): number | undefined {
    let oldest: number | undefined;
    for (const klass of KLASSES) {
      const queue = this.queues[klass];
      const first = queue.oldest();
      if (first >= 0 && (oldest === undefined || queue.receivedAtMs(first) < oldest)) oldest = queue.receivedAtMs(first);
    }
    const report = this.reports[0];
    if (report && (oldest === undefined || report.receivedAtMs < oldest)) oldest = report.receivedAtMs;
    return oldest;
  }

  addHeartbeat(record: HeartbeatRecord): void {
    let device = this.devices.get(record.deviceId);
    if (!device) {
      device = { id: record.deviceId, written: undefined, forgotten: false, seq: 0, klass: 'first', slot: 0 };
      this.devices.set(record.deviceId, device);
    }
    // A newer heartbeat of a device with one pending replaces it; a change stays a change.
    const pending = device.seq !== 0;
    const pendingChange = pending && (device.klass === 'change' || this.queues[device.klass].versionHash(device.slot) !== record.versionHash);
    if (pending) this.unlink(device);
    let klass: Klass;
    if (pendingChange) klass = 'change';
    else if (device.written === undefined) klass = 'first';
    else klass = device.written === record.versionHash ? 'seen' : 'change';
    const bytes = heartbeatBytes(record);
    device.klass = klass;
    this.queues[klass].push(device, ++this.seq, record, bytes, this.fields);
    this.live[klass]++;
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
    const devices: Device[] = [];
    for (const klass of KLASSES) {
      const queue = this.queues[klass];
      for (let slot = queue.start; slot < queue.length; slot++) {
        if (!queue.isLive(slot)) continue;
        const device = queue.owner(slot);
        device.seq = 0;
        heartbeats.push(queue.record(slot, device.id));
        devices.push(device); // kept in the map: `written` or `putBack` comes next
      }
      this.live[klass] = 0;
      queue.clear();
    }
    this.staleBytes = 0;
    const reports = this.reports;
    this.reports = [];
    this.heartbeatBytesTotal = 0;
    this.reportBytesTotal = 0;
    return { heartbeats, reports, devices };
  }

  /** A flush failed: its records go back, unless a newer heartbeat of the device came in since. */
  putBack(taken: Taken): void {
    taken.heartbeats.forEach((record, i) => {
      const device = taken.devices[i];
      const current = device && !device.forgotten ? device : this.devices.get(record.deviceId);
      if (!current || current.seq === 0) this.addHeartbeat(record);
    });
    const newer = this.reports;
    this.reports = [];
    this.reportBytesTotal = 0;
    for (const report of [...taken.reports, ...newer]) this.addReport(report);
  }

  /** A flush committed: these devices are now known at these versions. */
  written(taken: Taken): void {
    taken.heartbeats.forEach((r, i) => {
      let device = taken.devices[i]!;
      // Forgotten while this flush was under way (its heartbeat since dropped): what landed
      // goes to the device's newer entry if a heartbeat made one, else the entry comes back.
      if (device.forgotten) {
        device = this.devices.get(device.id) ?? device;
        device.forgotten = false;
      }
      // A steady heartbeat changes nothing here. Only a device new to the memory or on another
      // version moves to the end: the oldest entry is then the one known longest without a
      // change.
      if (device.written === r.versionHash) return;
      if (device.written === undefined && this.remembered >= this.knownLimit) {
        if (++this.refusedSinceAdmit < this.admitEvery) {
          if (device.seq === 0) this.forget(device); // nothing else holds it: its next heartbeat is a first sighting
          return;
        }
        this.refusedSinceAdmit = 0;
      }
      this.devices.delete(device.id);
      if (device.written === undefined) this.remembered++;
      device.written = this.texts.text(r.versionHash);
      this.devices.set(device.id, device);
      this.reclassify(device);
    });
    // One pass from the oldest: a fresh iterator per eviction would walk the holes the earlier
    // deletions left at the front of the Map, again and again. A device with a heartbeat
    // pending stays in the map (its pending heartbeat is reached through it); only its
    // written version is forgotten.
    let excess = this.remembered - this.knownLimit;
    if (excess <= 0) return;
    for (const device of this.devices.values()) {
      if (device.written === undefined) continue;
      device.written = undefined;
      this.remembered--;
      if (device.seq === 0) this.forget(device);
      if (--excess === 0) break;
    }
  }

  /**
   * The device's written version just moved: a heartbeat that came in during the flush was
   * classified against the version before it, and one on another version than the flush wrote
   * (a device that moved and came back within a flush: an update that failed its boot check)
   * is a change now, never to be dropped as a last_seen update or a first sighting.
   */
  private reclassify(device: Device): void {
    if (device.seq === 0 || device.klass === 'change') return;
    const queue = this.queues[device.klass];
    if (queue.versionHash(device.slot) === device.written) return;
    const record = queue.record(device.slot, device.id);
    const bytes = queue.bytes(device.slot);
    this.unlink(device);
    device.klass = 'change';
    this.queues.change.push(device, ++this.seq, record, bytes, this.fields);
    this.live.change++;
    this.heartbeatBytesTotal += bytes;
  }

  /** Takes an entry that holds nothing (no written version, no pending heartbeat) out of the map. */
  private forget(device: Device): void {
    this.devices.delete(device.id);
    device.forgotten = true;
  }

  /** A pending heartbeat leaves its queue (replaced or dropped): its slot turns stale. */
  private unlink(device: Device): void {
    const bytes = this.queues[device.klass].bytes(device.slot);
    device.seq = 0;
    this.live[device.klass]--;
    this.heartbeatBytesTotal -= bytes;
    this.staleBytes += bytes;
  }

  private enforceBudget(): void {
    while (this.bytes > this.budgetBytes) {
      const victim = this.oldest('seen') ?? this.oldest('first');
      if (victim) {
        this.dropped[victim.klass === 'seen' ? 'last_seen' : 'new_device']++;
        this.unlink(victim);
        // An entry left holding nothing goes: a first sighting (a flood of invented ids leaves
        // nothing behind), or a known device whose written version was forgotten meanwhile.
        if (victim.written === undefined) this.forget(victim);
      } else if (this.reportBytesTotal > this.budgetBytes) {
        this.reportBytesTotal -= reportBytes(this.reports.shift()!);
        this.dropped.report_overflow++;
      } else {
        break; // what is left is version changes and reports: kept
      }
    }
    if (this.staleBytes > this.budgetBytes / 8) this.compact();
  }

  /** The device of the oldest live slot of a queue. */
  private oldest(klass: Klass): Device | undefined {
    const queue = this.queues[klass];
    const slot = queue.oldest();
    return slot < 0 ? undefined : queue.owner(slot);
  }

  /**
   * Drops the stale slots of every queue. It runs once they hold an eighth of the budget, so
   * each pass removes at least that much for the live slots it copies: linear in the
   * heartbeats, not in heartbeats × queue length.
   */
  private compact(): void {
    for (const klass of KLASSES) this.queues[klass].compact();
    this.staleBytes = 0;
  }
}
