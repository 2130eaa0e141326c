import { Counter } from 'prom-client';
import type { FleetBatch, HeartbeatRecord, PackedHeartbeats, ReportRecord } from '../messages/fleet.js';
import type { HeartbeatRequest } from '../messages/manifester.js';
import type { HeartbeatFields, UpdateReport } from '../shared/wire/validate.js';
import type { ActorContext } from './runtime.js';

// What a front-end hands the fleet actor, after the device has its answer: records gathered
// for a short while travel in one fire-and-forget message, never awaited on an answer path.
// Heartbeats are packed as they come (PackedHeartbeats: UTF-8 bytes and a Float64Array per
// batch, no object per heartbeat), since at tens of thousands a second cloning an object each
// cost the front-end and the fleet actor more than the whole database write. A front-end
// holds at most MAX_QUEUED records; past that (the fleet actor is restarting or far behind)
// the newest are counted as lost rather than held.

const SEND_AFTER_MS = 50;
const MAX_BATCH = 2048;
const MAX_QUEUED = 20_000;
/** Float64 values per packed heartbeat: free_ram, free_disk, receivedAtMs, transport. */
const NUMBERS = 4;
const TRANSPORTS = ['http', 'coap'] as const;

const textOf = (v: unknown) => (typeof v === 'string' ? v : '');
const countOf = (v: unknown) => (typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : 0);

/** Bytes reserved per heartbeat before packing: six length prefixes, and 3 UTF-8 bytes per UTF-16 unit at most. */
const worstBytes = (...texts: string[]) => texts.reduce((sum, t) => sum + 2 + 3 * t.length, 0);

/** Heartbeats packed one after another, up to `capacity`. */
export class HeartbeatPacker {
  private bytes = Buffer.allocUnsafe(64 * 1024);
  private used = 0;
  private readonly numbers: Float64Array;
  count = 0;

  constructor(readonly capacity: number) {
    this.numbers = new Float64Array(capacity * NUMBERS);
  }

  /** Packs a heartbeat whose fields `validateHeartbeat` accepted; false when full. */
  add(fields: HeartbeatFields, request: HeartbeatRequest, transport: 'http' | 'coap', receivedAtMs: number): boolean {
    if (this.count >= this.capacity) return false;
    const hw = (typeof fields.hw_info === 'object' && fields.hw_info !== null ? fields.hw_info : {}) as Record<string, unknown>;
    const texts = [request.deviceId, request.versionHash, textOf(fields.version), request.artifact, textOf(hw.arch), textOf(hw.os)];
    const need = this.used + worstBytes(...texts);
    if (need > this.bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, 2 * this.bytes.length));
      this.bytes.copy(grown, 0, 0, this.used);
      this.bytes = grown;
    }
    for (const text of texts) {
      const length = this.bytes.write(text, this.used + 2);
      this.bytes.writeUInt16LE(length, this.used);
      this.used += 2 + length;
    }
    const at = this.count++ * NUMBERS;
    this.numbers[at] = countOf(hw.free_ram);
    this.numbers[at + 1] = countOf(hw.free_disk);
    this.numbers[at + 2] = receivedAtMs;
    this.numbers[at + 3] = transport === 'http' ? 0 : 1;
    return true;
  }

  /** What was packed (copies, ready to post); the packer is empty afterwards. */
  take(): PackedHeartbeats {
    const packed = { count: this.count, text: Uint8Array.prototype.slice.call(this.bytes, 0, this.used), numbers: this.numbers.slice(0, this.count * NUMBERS) };
    this.used = 0;
    this.count = 0;
    return packed;
  }
}

/**
 * The fleet actor's side: each packed heartbeat as a record, in order. Every string is decoded
 * on its own (never a slice of a larger one), so a record or a key kept for long holds only
 * its own characters.
 */
export function unpackHeartbeats(packed: PackedHeartbeats, visit: (record: HeartbeatRecord) => void): void {
  const bytes = Buffer.from(packed.text.buffer, packed.text.byteOffset, packed.text.byteLength);
  const { numbers } = packed;
  let at = 0;
  const next = () => {
    const end = at + 2 + bytes.readUInt16LE(at);
    const value = bytes.toString('utf8', at + 2, end);
    at = end;
    return value;
  };
  for (let i = 0; i < packed.count; i++) {
    const deviceId = next();
    const versionHash = next();
    const version = next();
    const artifact = next();
    const hwArch = next();
    const hwOs = next();
    const n = i * NUMBERS;
    visit({
      deviceId, versionHash, version, artifact, hwArch, hwOs,
      hwFreeRam: numbers[n]!, hwFreeDisk: numbers[n + 1]!, receivedAtMs: numbers[n + 2]!, transport: TRANSPORTS[numbers[n + 3]!]!,
    });
  }
}

export function reportRecord(report: UpdateReport, receivedAtMs: number): ReportRecord {
  return {
    deviceId: report.deviceId, previousHash: report.previousHash, newHash: report.newHash, success: report.success,
    rollbackReason: report.rollbackReason, timestamp: report.timestamp, receivedAtMs,
  };
}

export class FleetFeed {
  private readonly heartbeats = new HeartbeatPacker(MAX_BATCH);
  private reports: ReportRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Records this front-end could not hand over (fleet actor away, or queue full). */
  lost = 0;

  /** `send` posts one batch; it throws or rejects when the fleet actor is not there. */
  constructor(private readonly send: ((batch: FleetBatch) => Promise<void> | void) | undefined) {}

  /** An answered heartbeat whose fields `validateHeartbeat` accepted. */
  heartbeat(fields: HeartbeatFields, request: HeartbeatRequest, transport: 'http' | 'coap', receivedAtMs: number): void {
    if (!this.send) return;
    if (this.heartbeats.count + this.reports.length >= MAX_QUEUED) {
      this.lost++;
      return;
    }
    if (this.heartbeats.add(fields, request, transport, receivedAtMs)) this.schedule();
    else this.lost++;
  }

  report(record: ReportRecord): void {
    if (!this.send) return;
    this.reports.push(record); // a report is never refused here: they are rare, and each one counts
    this.schedule();
  }

  /** Hands over whatever is queued now (drain). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.heartbeats.count === 0 && this.reports.length === 0) return;
    const batch: FleetBatch = { heartbeats: this.heartbeats.take(), reports: this.reports };
    this.reports = [];
    const count = batch.heartbeats.count + batch.reports.length;
    try {
      Promise.resolve(this.send!(batch)).catch(() => (this.lost += count));
    } catch {
      this.lost += count;
    }
  }

  private schedule(): void {
    if (this.heartbeats.count + this.reports.length >= MAX_BATCH) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), SEND_AFTER_MS);
  }
}

/** The feed of a front-end: to the fleet actor, or nowhere when the inventory is turned off. */
export function fleetFeedFor(ctx: ActorContext): FleetFeed {
  const feed = new FleetFeed(ctx.config.fleet.enabled ? (batch) => ctx.peer('fleet').record(batch) : undefined);
  new Counter({
    name: 'updater_fleet_feed_lost_total',
    help: 'Inventory records a front-end could not hand to the fleet actor (restarting, or 20,000 queued)',
    registers: [ctx.registry],
    collect() {
      this.reset();
      this.inc(feed.lost);
    },
  });
  return feed;
}
