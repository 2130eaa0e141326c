import { Counter } from 'prom-client';
import type { AttributesRecord, FleetBatch, ReportRecord } from '../../messages/fleet.js';
import { HeartbeatPacker } from '../../messages/fleet-batch.js';
import type { Heartbeat, UpdateReport } from '../../shared/wire/validate.js';
import type { ActorContext } from '../runtime.js';

// What a front-end hands the fleet actor, after the device has its answer: records gathered
// for a short while travel in one fire-and-forget message, never awaited on an answer path.
// Heartbeats are packed as they come (src/messages/fleet-batch.ts, where the fleet actor's
// unpacking stands beside the packing). A front-end holds at most MAX_QUEUED records; past
// that (the fleet actor is restarting or far behind) the newest are counted as lost rather
// than held.

const SEND_AFTER_MS = 50;
const MAX_BATCH = 2048;
const MAX_QUEUED = 20_000;

export function reportRecord(report: UpdateReport, receivedAtMs: number): ReportRecord {
  return {
    deviceId: report.deviceId, previousHash: report.previousHash, newHash: report.newHash, success: report.success,
    rollbackReason: report.rollbackReason, timestamp: report.timestamp, receivedAtMs,
  };
}

export class FleetFeed {
  private readonly heartbeats = new HeartbeatPacker(MAX_BATCH);
  private reports: ReportRecord[] = [];
  /** Beside the packed heartbeats: the few that carried attributes. */
  private attributes: AttributesRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Records this front-end could not hand over (fleet actor away, or queue full). */
  lost = 0;

  /** `send` posts one batch; it throws or rejects when the fleet actor is not there. */
  constructor(private readonly send: ((batch: FleetBatch) => Promise<void> | void) | undefined) {}

  /** An answered, validated heartbeat. */
  heartbeat(heartbeat: Heartbeat, transport: 'http' | 'coap', receivedAtMs: number): void {
    if (!this.send) return;
    if (this.heartbeats.count + this.reports.length >= MAX_QUEUED) {
      this.lost++;
      return;
    }
    if (!this.heartbeats.add(heartbeat, transport, receivedAtMs)) {
      this.lost++;
      return;
    }
    if (heartbeat.attributes) this.attributes.push({ deviceId: heartbeat.deviceId, attributes: heartbeat.attributes });
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
    if (this.heartbeats.count === 0 && this.reports.length === 0) return;
    const batch: FleetBatch = { heartbeats: this.heartbeats.take(), reports: this.reports, ...(this.attributes.length > 0 ? { attributes: this.attributes } : {}) };
    this.reports = [];
    this.attributes = [];
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
