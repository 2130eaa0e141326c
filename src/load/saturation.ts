import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

// A load generator measures itself: when its own event loop is busy or late, the latencies it
// records include its own queueing and the rate it sends is not the rate asked for. Such a run
// measured the harness, not the server, and is reported invalid rather than as a result.

export interface HarnessLoad {
  /** Share of wall time this process's event loop ran code (event-loop utilization). */
  readonly event_loop_utilization: number;
  /**
   * CPU time this process used per second of wall time (1 = a whole core). Beside the
   * utilization it tells a costly harness (both high) from one starved by other programs on
   * its core (utilization high, CPU low: its callbacks waited to be scheduled).
   */
  readonly cpu_cores: number;
  /** How late its timers fired beyond the 10 ms probe: p99 and max, ms. */
  readonly event_loop_delay_p99_ms: number;
  readonly event_loop_delay_max_ms: number;
  /** Requests due by the schedule that were not sent (no idle device, or the in-flight cap). */
  readonly not_sent: number;
  readonly sent: number;
}

/** Limits past which a load process counts as saturated. */
export const HARNESS_LIMITS = { utilization: 0.8, delayP99Ms: 25 } as const;

const PROBE_MS = 10;

export class SaturationProbe {
  private readonly delay = monitorEventLoopDelay({ resolution: PROBE_MS });
  private readonly start = performance.eventLoopUtilization();
  private readonly cpuStart = process.cpuUsage();
  private readonly wallStart = performance.now();

  constructor() {
    this.delay.enable();
  }

  finish(sent: number, notSent: number): HarnessLoad {
    this.delay.disable();
    const used = performance.eventLoopUtilization(this.start);
    const cpu = process.cpuUsage(this.cpuStart);
    const cpuCores = (cpu.user + cpu.system) / 1000 / Math.max(1, performance.now() - this.wallStart);
    const ms = (ns: number) => Number(Math.max(0, ns / 1e6 - PROBE_MS).toFixed(2));
    return {
      event_loop_utilization: Number(used.utilization.toFixed(3)),
      cpu_cores: Number(cpuCores.toFixed(3)),
      event_loop_delay_p99_ms: this.delay.count > 0 ? ms(this.delay.percentile(99)) : 0,
      event_loop_delay_max_ms: this.delay.count > 0 ? ms(this.delay.max) : 0,
      not_sent: notSent,
      sent,
    };
  }
}

/** Why a load process counts as saturated, or an empty list. */
export function saturationReasons(name: string, load: HarnessLoad): string[] {
  const reasons: string[] = [];
  // Utilization counts the time a callback waited to be scheduled: far above the CPU used, the
  // process was starved by other programs on its core rather than busy with its own work.
  const starved = load.cpu_cores < load.event_loop_utilization / 2 ? ` while it used ${load.cpu_cores.toFixed(2)} cores of CPU: starved by other programs` : '';
  if (load.event_loop_utilization > HARNESS_LIMITS.utilization) reasons.push(`${name}: its event loop was busy ${(load.event_loop_utilization * 100).toFixed(0)} % of the time (limit ${HARNESS_LIMITS.utilization * 100} %)${starved}`);
  if (load.event_loop_delay_p99_ms > HARNESS_LIMITS.delayP99Ms) reasons.push(`${name}: its timers fired ${load.event_loop_delay_p99_ms} ms late at p99 (limit ${HARNESS_LIMITS.delayP99Ms} ms)`);
  return reasons;
}
