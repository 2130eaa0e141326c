// Counters and a latency record for the load harness. Latencies are kept as raw samples up
// to a cap (a 60 s run at 10k/s is 600k floats, 2.4 MB) and sorted once for percentiles.

const MAX_SAMPLES = 2_000_000;

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
  private readonly samples = new Float32Array(MAX_SAMPLES);
  private sampleCount = 0;
  private seen = 0;

  recordLatency(ms: number): void {
    this.seen++;
    if (this.sampleCount < MAX_SAMPLES) this.samples[this.sampleCount++] = ms;
    else {
      // Reservoir sampling keeps the percentiles fair past the cap.
      const slot = Math.floor(Math.random() * this.seen);
      if (slot < MAX_SAMPLES) this.samples[slot] = ms;
    }
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

  percentiles(): { p50: number; p99: number; p999: number; max: number } {
    const sorted = this.samples.slice(0, this.sampleCount).sort();
    const at = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : 0);
    return { p50: at(0.5), p99: at(0.99), p999: at(0.999), max: sorted.length ? sorted[sorted.length - 1]! : 0 };
  }

  elapsedSeconds(): number {
    return (performance.now() - this.started) / 1000;
  }
}
