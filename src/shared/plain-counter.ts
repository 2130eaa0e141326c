import { Counter, type Registry } from 'prom-client';

// A labelled counter for a hot path: counted in plain numbers there, handed to prom-client
// only when /metrics is scraped (a labelled inc() hashes and validates its labels on every
// call, which on the heartbeat path costs more than what it counts). Every label value is
// collected from the first scrape, so a dashboard sees zeros rather than nothing.

export interface PlainCounterSpec<V extends string> {
  readonly name: string;
  readonly help: string;
  readonly label: string;
  readonly values: readonly V[];
}

/** The counts to increment, one per label value: `counts[value]++`. */
export function plainCounter<V extends string>(registry: Registry, spec: PlainCounterSpec<V>): Record<V, number> {
  const counts = Object.fromEntries(spec.values.map((value) => [value, 0])) as Record<V, number>;
  const collected = { ...counts };
  new Counter({
    name: spec.name,
    help: spec.help,
    labelNames: [spec.label],
    registers: [registry],
    collect() {
      for (const value of spec.values) {
        this.inc({ [spec.label]: value }, counts[value] - collected[value]);
        collected[value] = counts[value];
      }
    },
  });
  return counts;
}
