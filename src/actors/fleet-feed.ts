import { Counter } from 'prom-client';
import type { FleetBatch, HeartbeatRecord, PackedHeartbeats, ReportRecord } from '../messages/fleet.js';
import type { HeartbeatRequest } from '../messages/manifester.js';
import type { HeartbeatFields, UpdateReport } from '../shared/wire/validate.js';
import type { ActorContext } from './runtime.js';

// What a front-end hands the fleet actor, after the device has its answer: records gathered
// for a short while travel in one fire-and-forget message, never awaited on an answer path.
// Heartbeats are packed as they come (PackedHeartbeats: each distinct text once, and typed
// arrays of references and numbers, no object per heartbeat): at tens of thousands a second,
// an object each to clone, and the same version hash and track key copied and decoded again
// in every record, cost the two threads more than the database write itself. A front-end
// holds at most MAX_QUEUED records; past that (the fleet actor is restarting or far behind)
// the newest are counted as lost rather than held.

const SEND_AFTER_MS = 50;
const MAX_BATCH = 2048;
const MAX_QUEUED = 20_000;
/** Strings per packed heartbeat: device id, version hash, version, artifact, hw arch, hw os. */
const STRINGS = 6;
/** Float64 values per packed heartbeat: free_ram, free_disk, receivedAtMs, transport. */
const NUMBERS = 4;
const TRANSPORTS = ['http', 'coap'] as const;

const textOf = (v: unknown) => (typeof v === 'string' ? v : '');
const countOf = (v: unknown) => (typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : 0);

/** Heartbeats packed one after another, up to `capacity`. */
export class HeartbeatPacker {
  private strings: string[] = [];
  private index = new Map<string, number>();
  private readonly refs: Uint32Array;
  private readonly numbers: Float64Array;
  count = 0;

  constructor(readonly capacity: number) {
    this.refs = new Uint32Array(capacity * STRINGS);
    this.numbers = new Float64Array(capacity * NUMBERS);
  }

  /** Packs a heartbeat whose fields `validateHeartbeat` accepted; false when full. */
  add(fields: HeartbeatFields, request: HeartbeatRequest, transport: 'http' | 'coap', receivedAtMs: number): boolean {
    if (this.count >= this.capacity) return false;
    const hw = (typeof fields.hw_info === 'object' && fields.hw_info !== null ? fields.hw_info : {}) as Record<string, unknown>;
    const s = this.count * STRINGS;
    this.refs[s] = this.ref(request.deviceId);
    this.refs[s + 1] = this.ref(request.versionHash);
    this.refs[s + 2] = this.ref(textOf(fields.version));
    this.refs[s + 3] = this.ref(request.artifact);
    this.refs[s + 4] = this.ref(textOf(hw.arch));
    this.refs[s + 5] = this.ref(textOf(hw.os));
    const n = this.count++ * NUMBERS;
    this.numbers[n] = countOf(hw.free_ram);
    this.numbers[n + 1] = countOf(hw.free_disk);
    this.numbers[n + 2] = receivedAtMs;
    this.numbers[n + 3] = transport === 'http' ? 0 : 1;
    return true;
  }

  /** What was packed (copies, ready to post); the packer is empty afterwards. */
  take(): PackedHeartbeats {
    const packed = { count: this.count, strings: this.strings, refs: this.refs.slice(0, this.count * STRINGS), numbers: this.numbers.slice(0, this.count * NUMBERS) };
    this.strings = [];
    this.index = new Map();
    this.count = 0;
    return packed;
  }

  /** The text's place in `strings`: each distinct text of the batch travels once. */
  private ref(text: string): number {
    let at = this.index.get(text);
    if (at === undefined) {
      at = this.strings.push(text) - 1;
      this.index.set(text, at);
    }
    return at;
  }
}

/** The fleet actor's side: each packed heartbeat as a record, in order; equal texts are one string. */
export function unpackHeartbeats(packed: PackedHeartbeats, visit: (record: HeartbeatRecord) => void): void {
  const { strings, refs, numbers } = packed;
  for (let i = 0; i < packed.count; i++) {
    const s = i * STRINGS;
    const n = i * NUMBERS;
    visit({
      deviceId: strings[refs[s]!]!, versionHash: strings[refs[s + 1]!]!, version: strings[refs[s + 2]!]!,
      artifact: strings[refs[s + 3]!]!, hwArch: strings[refs[s + 4]!]!, hwOs: strings[refs[s + 5]!]!,
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
