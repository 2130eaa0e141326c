import { monitorEventLoopDelay, performance, type EventLoopUtilization } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { Counter, Gauge, type Registry } from 'prom-client';

// Per-thread runtime metrics: every actor's worker and the supervisor's main thread register
// these on their own registry with their name as the `actor` label, so /metrics shows which
// event loop was blocked and which isolate's heap grew (a process-wide RSS cannot say which).
//
// Event-loop delay: a timer every RESOLUTION_MS; each firing records the time since the last
// one. Time beyond the resolution is time the loop could not run timers: "blocked". The sum of
// that excess, (mean - resolution) × count, is exported as a counter, so rate() of it is the
// share of wall time the loop was blocked, whoever scrapes and however often.

const RESOLUTION_MS = 20;
const NS_PER_S = 1e9;

export function registerRuntimeMetrics(registry: Registry, actor: string): void {
  const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  delay.enable();
  // The loop's own timer jitter (a few tenths of a millisecond per firing) is counted as
  // blocked time too; the excess is only read when collected, so nothing runs per request.
  let blockedSeconds = 0;
  let lastUtilization: EventLoopUtilization = performance.eventLoopUtilization();
  let busySeconds = 0;
  let window = { p50: 0, p99: 0, max: 0 };
  const sample = () => {
    if (delay.count > 0) {
      blockedSeconds += Math.max(0, delay.mean - RESOLUTION_MS * 1e6) * delay.count / NS_PER_S;
      window = { p50: excess(delay.percentile(50)), p99: excess(delay.percentile(99)), max: excess(delay.max) };
    }
    delay.reset();
    const now = performance.eventLoopUtilization();
    busySeconds += (now.active - lastUtilization.active) / 1000;
    lastUtilization = now;
  };
  const labels = { actor };
  new Counter({
    name: 'updater_event_loop_blocked_seconds_total',
    help: 'Time the event loop could not run timers (delay beyond the 20 ms probe), per actor thread; rate() is the blocked share',
    labelNames: ['actor'],
    registers: [registry],
    collect() {
      sample();
      this.reset();
      this.inc(labels, blockedSeconds);
    },
  });
  new Counter({
    name: 'updater_event_loop_busy_seconds_total',
    help: 'Time the event loop spent running code rather than waiting for I/O (event-loop utilization), per actor thread',
    labelNames: ['actor'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc(labels, busySeconds);
    },
  });
  new Gauge({
    name: 'updater_event_loop_delay_seconds',
    // `stat`, not `quantile`: Prometheus keeps that label for summaries (promtool refuses it here).
    help: 'Event-loop delay beyond the probe interval since the previous scrape, per actor thread (stat p50, p99, max)',
    labelNames: ['actor', 'stat'],
    registers: [registry],
    collect() {
      this.set({ actor, stat: 'p50' }, window.p50);
      this.set({ actor, stat: 'p99' }, window.p99);
      this.set({ actor, stat: 'max' }, window.max);
    },
  });
  new Gauge({
    name: 'updater_actor_heap_bytes',
    help: 'V8 heap statistics of each actor thread (v8.getHeapStatistics): used, total (reserved by the heap), external (strings and other memory reported to V8), malloced, array_buffers (ArrayBuffer backing stores allocated by the thread and not yet freed)',
    labelNames: ['actor', 'kind'],
    registers: [registry],
    collect() {
      const heap = getHeapStatistics();
      this.set({ actor, kind: 'used' }, heap.used_heap_size);
      this.set({ actor, kind: 'total' }, heap.total_heap_size);
      this.set({ actor, kind: 'external' }, heap.external_memory);
      this.set({ actor, kind: 'malloced' }, heap.malloced_memory);
      // ArrayBuffer and SharedArrayBuffer backing stores this thread allocated and has not yet
      // freed: V8 frees one only when every thread's object for it has been collected, so dead
      // buffers wait here for a full collection. Not part of `external`.
      this.set({ actor, kind: 'array_buffers' }, process.memoryUsage().arrayBuffers);
    },
  });
}

/** Nanoseconds of one firing's interval → seconds beyond the probe's own interval. */
function excess(ns: number): number {
  return Math.max(0, ns / 1e6 - RESOLUTION_MS) / 1000;
}
