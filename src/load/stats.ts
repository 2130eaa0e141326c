import { build, type Histogram } from 'hdr-histogram-js';
import { LatencyHistogram } from './latency.js';

// Counters and a latency record for the load harness. Latencies go into an HDR histogram
// (microseconds, 3 significant digits): a few tens of kilobytes however long the run,
// where raw samples would need a buffer sized for the longest run. Each kind of request (HTTP
// heartbeat, CoAP heartbeat, download) has one of its own, which load processes can merge.

export class LoadStats {
  readonly started = performance.now();
  requests = 0;
  heartbeats = 0;
  downloads = 0;
  bytesDown = 0;
  bytesUp = 0;
  updatesApplied = 0;
  updatesFailed = 0;
  reports = 0;
  readonly errors = new Map<string, number>();
  readonly outcomes = new Map<string, number>();
  private readonly latencyUs: Histogram = build({ lowestDiscernibleValue: 1, numberOfSignificantValueDigits: 3 });
  /** Latency by kind of request, e.g. http_heartbeat, coap_heartbeat, download. */
  readonly kinds = new Map<string, LatencyHistogram>();

  recordLatency(ms: number): void {
    this.latencyUs.recordValue(Math.max(1, Math.round(ms * 1000)));
  }

  recordKind(kind: string, ms: number): void {
    let histogram = this.kinds.get(kind);
    if (!histogram) this.kinds.set(kind, (histogram = new LatencyHistogram()));
    histogram.record(ms);
  }

  error(kind: string): void {
    this.errors.set(kind, (this.errors.get(kind) ?? 0) + 1);
  }

  outcome(kind: string): void {
    this.outcomes.set(kind, (this.outcomes.get(kind) ?? 0) + 1);
  }

  get errorCount(): number {
    let n = 0;
    for (const v of this.errors.values()) n += v;
    return n;
  }

  /** Latency percentiles in milliseconds; all 0 before the first sample. */
  percentiles(): { p50: number; p99: number; p999: number; max: number } {
    const h = this.latencyUs;
    if (h.totalCount === 0) return { p50: 0, p99: 0, p999: 0, max: 0 };
    const ms = (us: number) => us / 1000;
    return { p50: ms(h.getValueAtPercentile(50)), p99: ms(h.getValueAtPercentile(99)), p999: ms(h.getValueAtPercentile(99.9)), max: ms(h.maxValue) };
  }

  elapsedSeconds(): number {
    return (performance.now() - this.started) / 1000;
  }
}
