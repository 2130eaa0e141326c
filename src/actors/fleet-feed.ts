import { Counter } from 'prom-client';
import type { FleetBatch, HeartbeatRecord, ReportRecord } from '../messages/fleet.js';
import type { HeartbeatRequest } from '../messages/manifester.js';
import type { HeartbeatFields, UpdateReport } from '../shared/wire/validate.js';
import type { ActorContext } from './runtime.js';

// What a front-end hands the fleet actor, after the device has its answer: records gathered
// for a short while travel in one fire-and-forget message, never awaited on an answer path.
// A front-end holds at most MAX_QUEUED records; past that (the fleet actor is restarting or
// far behind) the newest are counted as lost rather than held.

const SEND_AFTER_MS = 50;
const MAX_BATCH = 2048;
const MAX_QUEUED = 20_000;

const textOf = (v: unknown) => (typeof v === 'string' ? v : '');
const countOf = (v: unknown) => (typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : 0);

/** The inventory record of a heartbeat whose fields `validateHeartbeat` accepted. */
export function heartbeatRecord(fields: HeartbeatFields, request: HeartbeatRequest, transport: 'http' | 'coap', receivedAtMs: number): HeartbeatRecord {
  const hw = (typeof fields.hw_info === 'object' && fields.hw_info !== null ? fields.hw_info : {}) as Record<string, unknown>;
  return {
    deviceId: request.deviceId, versionHash: request.versionHash, version: textOf(fields.version), artifact: request.artifact,
    hwArch: textOf(hw.arch), hwOs: textOf(hw.os), hwFreeRam: countOf(hw.free_ram), hwFreeDisk: countOf(hw.free_disk),
    transport, receivedAtMs,
  };
}

export function reportRecord(report: UpdateReport, receivedAtMs: number): ReportRecord {
  return {
    deviceId: report.deviceId, previousHash: report.previousHash, newHash: report.newHash, success: report.success,
    rollbackReason: report.rollbackReason, timestamp: report.timestamp, receivedAtMs,
  };
}

export class FleetFeed {
  private heartbeats: HeartbeatRecord[] = [];
  private reports: ReportRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Records this front-end could not hand over (fleet actor away, or queue full). */
  lost = 0;

  /** `send` posts one batch; it throws or rejects when the fleet actor is not there. */
  constructor(private readonly send: ((batch: FleetBatch) => Promise<void> | void) | undefined) {}

  heartbeat(record: HeartbeatRecord): void {
    if (!this.send) return;
    if (this.heartbeats.length + this.reports.length >= MAX_QUEUED) {
      this.lost++;
      return;
    }
    this.heartbeats.push(record);
    this.schedule();
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
    if (this.heartbeats.length === 0 && this.reports.length === 0) return;
    const batch: FleetBatch = { heartbeats: this.heartbeats, reports: this.reports };
    this.heartbeats = [];
    this.reports = [];
    const count = batch.heartbeats.length + batch.reports.length;
    try {
      Promise.resolve(this.send!(batch)).catch(() => (this.lost += count));
    } catch {
      this.lost += count;
    }
  }

  private schedule(): void {
    if (this.heartbeats.length + this.reports.length >= MAX_BATCH) this.flush();
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
