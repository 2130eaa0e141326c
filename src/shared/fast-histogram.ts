import type { Registry } from 'prom-client';

// A latency histogram for the request paths. prom-client's Histogram hashes and validates its
// labels on every observe(), which costs a busy front-end several percent of its throughput;
// here each label set is resolved once to a recorder whose observe() is a short loop, and
// prom-client sees the usual histogram JSON only when /metrics is scraped.

interface Series {
  readonly labels: Record<string, string>;
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

export class FastHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Series>();

  constructor(readonly name: string, readonly help: string, private readonly buckets: readonly number[], registry: Registry) {
    registry.registerMetric(this as never);
  }

  /** The recorder of one label set, created on first use and kept. */
  recorder(key: string, labels: Record<string, string>): (value: number) => void {
    let series = this.series.get(key);
    if (!series) {
      series = { labels, counts: new Float64Array(this.buckets.length), sum: 0, count: 0 };
      this.series.set(key, series);
    }
    const s = series;
    const buckets = this.buckets;
    return (value: number) => {
      s.sum += value;
      s.count++;
      for (let i = 0; i < buckets.length; i++) {
        if (value <= buckets[i]!) {
          s.counts[i]!++;
          break;
        }
      }
    };
  }

  /** prom-client's JSON form: cumulative `_bucket` samples with `le`, then `_sum` and `_count`. */
  async get(): Promise<unknown> {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const s of this.series.values()) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += s.counts[i]!;
        values.push({ labels: { ...s.labels, le }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: `${this.name}_bucket` });
      values.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series.clear();
  }
}

/**
 * The recorders of a request histogram labelled by route and answer class (the first digit of
 * an HTTP status or CoAP code), each made on first use: no key text is built on a request's path.
 * `labelsOf` names the series, e.g. `{ route, status: '2xx' }`.
 */
export function routeClassRecorders(histogram: FastHistogram, labelsOf: (route: string, answerClass: string) => Record<string, string>): (route: string, answerClass: string) => (value: number) => void {
  const byRoute = new Map<string, Map<string, (value: number) => void>>();
  return (route, answerClass) => {
    let byClass = byRoute.get(route);
    if (!byClass) byRoute.set(route, (byClass = new Map()));
    let record = byClass.get(answerClass);
    if (!record) byClass.set(answerClass, (record = histogram.recorder(`${route} ${answerClass}`, labelsOf(route, answerClass))));
    return record;
  };
}
