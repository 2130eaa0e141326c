import { build, decodeFromCompressedBase64, encodeIntoCompressedBase64, type Histogram } from 'hdr-histogram-js';

// A latency histogram per kind of request that separate load processes can merge: an HDR
// histogram in microseconds (3 significant digits), carried between processes in its
// compressed base64 form, so one figure per kind comes out of several load generators.

export interface LatencySummary {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

/** The serialized form (HdrHistogram's compressed base64 encoding). */
export type LatencyRecord = string;

export class LatencyHistogram {
  private readonly us: Histogram = build({ lowestDiscernibleValue: 1, numberOfSignificantValueDigits: 3 });

  record(ms: number): void {
    this.us.recordValue(Math.max(1, Math.round(ms * 1000)));
  }

  get count(): number {
    return this.us.totalCount;
  }

  summary(): LatencySummary {
    const h = this.us;
    if (h.totalCount === 0) return { count: 0, p50: 0, p99: 0, p999: 0, max: 0 };
    const ms = (us: number) => Number((us / 1000).toFixed(3));
    return { count: h.totalCount, p50: ms(h.getValueAtPercentile(50)), p99: ms(h.getValueAtPercentile(99)), p999: ms(h.getValueAtPercentile(99.9)), max: ms(h.maxValue) };
  }

  toRecord(): LatencyRecord {
    return encodeIntoCompressedBase64(this.us);
  }

  add(record: LatencyRecord): void {
    this.us.add(decodeFromCompressedBase64(record));
  }
}
