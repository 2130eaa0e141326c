// A latency histogram that separate load processes can merge: log-spaced buckets 1 % wide
// from 10 µs to about 4 minutes, so a percentile is read to within 1 % however many samples
// there are, and the whole record travels as a short list of non-empty buckets.

const FLOOR_MS = 0.01;
const GROWTH = 1.01;
const BUCKETS = 1800;
const LOG_GROWTH = Math.log(GROWTH);

export interface LatencySummary {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

/** The serialized form: [bucket, count] pairs of the non-empty buckets. */
export interface LatencyRecord {
  readonly buckets: readonly (readonly [number, number])[];
  readonly max: number;
}

export class LatencyHistogram {
  private readonly counts = new Float64Array(BUCKETS);
  private total = 0;
  private largest = 0;

  record(ms: number): void {
    const i = ms <= FLOOR_MS ? 0 : Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / FLOOR_MS) / LOG_GROWTH));
    this.counts[i]!++;
    this.total++;
    if (ms > this.largest) this.largest = ms;
  }

  get count(): number {
    return this.total;
  }

  /** The upper bound of the bucket holding the q-th sample (a conservative reading). */
  percentile(q: number): number {
    if (this.total === 0) return 0;
    const rank = Math.max(1, Math.ceil(q * this.total));
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return Math.min(this.largest, FLOOR_MS * GROWTH ** i);
    }
    return this.largest;
  }

  summary(): LatencySummary {
    const round = (n: number) => Number(n.toFixed(3));
    return { count: this.total, p50: round(this.percentile(0.5)), p99: round(this.percentile(0.99)), p999: round(this.percentile(0.999)), max: round(this.largest) };
  }

  toRecord(): LatencyRecord {
    const buckets: [number, number][] = [];
    this.counts.forEach((c, i) => {
      if (c > 0) buckets.push([i, c]);
    });
    return { buckets, max: this.largest };
  }

  add(record: LatencyRecord): void {
    for (const [i, c] of record.buckets) {
      if (!Number.isInteger(i) || i < 0 || i >= BUCKETS) throw new RangeError(`latency bucket ${i} is out of range`);
      this.counts[i]! += c;
      this.total += c;
    }
    if (record.max > this.largest) this.largest = record.max;
  }
}
