import type { LogLevel } from '../shared/logger.js';
import type { ActorName, Deadlines, ThreadMemory } from './lifecycle.js';

/** What actors may ask of the supervisor. */
export interface SupervisorApi {
  /** Prometheus text of every actor's registry merged with the process metrics. */
  metricsText(): Promise<string>;
  /**
   * Sets the log level of the supervisor and of every running actor at once; actors started
   * later (restarts) inherit it. Resolves with the actors that applied it.
   */
  setLogLevel(level: LogLevel): Promise<{ level: LogLevel; applied: ('supervisor' | ActorName)[] }>;
  /** Every thread's live memory (each runs a full collection first), and the process's RSS after them. */
  memory(): Promise<ServerMemory>;
}

/** The answer of POST /admin/memory (docs/operations.md). */
export interface ServerMemory {
  readonly rss: number;
  readonly threads: Partial<Record<'supervisor' | ActorName, ThreadMemory>>;
}

export const SUPERVISOR_DEADLINES_MS = {
  /** A scrape: anything slower is an outage of the metrics endpoint. */
  metricsText: 5_000,
  setLogLevel: 10_000,
  /** Each thread's own collection is bounded by CONTROL_DEADLINES_MS.memory; they run side by side. */
  memory: 10_000,
} as const satisfies Deadlines<SupervisorApi>;
