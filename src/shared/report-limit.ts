import { Counter, type Registry } from 'prom-client';
import { CountLru } from './lru.js';

// Update reports per device (docs/operations.md, "Report rate limit"). A device sends one
// report per update attempt, a few an hour at most; one that sends hundreds a second (a broken
// agent, or a stolen identity) would fill the report table and the webhooks with copies. Each
// device has a token bucket of `fleet.report_burst` reports refilled at
// `fleet.reports_per_minute`; a report that finds it empty is refused and counted.
//
// It is kept in memory where reports arrive, so the answer needs no database round trip: in
// each front-end (which answers the device 429 / 4.29 and never hands the report on) and again
// in the fleet actor as it takes reports in (one bucket per device for HTTP and CoAP together:
// a device that sends over both is held to one limit of stored reports). Both count by the
// time the front-end received the report, so what a front-end let through on one transport the
// fleet actor lets through too.

/** Devices whose buckets are held; past it the least recently seen is forgotten (and starts full again). */
export const REPORT_LIMIT_DEVICES = 65_536;

export interface ReportRate {
  /** Reports a device may send at once; 0 turns the limit off. */
  readonly burst: number;
  readonly perMinute: number;
}

interface Bucket {
  tokens: number;
  atMs: number;
}

export class ReportLimiter {
  private readonly buckets = new CountLru<string, Bucket>(REPORT_LIMIT_DEVICES);
  private readonly perMs: number;

  constructor(private readonly rate: ReportRate) {
    this.perMs = rate.perMinute / 60_000;
  }

  /** Takes one report of `deviceId` at `nowMs`: 0 when it is let through, else the milliseconds until it would be. */
  take(deviceId: string, nowMs: number): number {
    if (this.rate.burst <= 0) return 0;
    const held = this.buckets.get(deviceId);
    const bucket = held ?? { tokens: this.rate.burst, atMs: nowMs };
    // Reports of two front-ends arrive out of order by a few milliseconds: time never runs back.
    const elapsed = Math.max(0, nowMs - bucket.atMs);
    bucket.tokens = Math.min(this.rate.burst, bucket.tokens + elapsed * this.perMs);
    bucket.atMs = Math.max(bucket.atMs, nowMs);
    if (!held) this.buckets.set(deviceId, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - bucket.tokens) / this.perMs);
  }
}

/** `updater_reports_rate_limited_total{by}`: reports refused, by where (http, coap: answered 429 / 4.29; fleet: dropped at ingest). */
export function reportLimitCounter(registry: Registry, by: 'http' | 'coap' | 'fleet'): () => void {
  const refused = new Counter({
    name: 'updater_reports_rate_limited_total',
    help: 'Update reports refused by the per-device limit (fleet.report_burst, fleet.reports_per_minute): http and coap answered 429 / 4.29; fleet dropped at ingest (a device sending over both transports)',
    labelNames: ['by'],
    registers: [registry],
  });
  refused.inc({ by }, 0);
  return () => refused.inc({ by });
}
