import type { LogLevel } from '../shared/logger.js';
import type { ActorName, Deadlines } from './lifecycle.js';

/** What actors may ask of the supervisor. */
export interface SupervisorApi {
  /** Prometheus text of every actor's registry merged with the process metrics. */
  metricsText(): Promise<string>;
  /**
   * Sets the log level of the supervisor and of every running actor at once; actors started
   * later (restarts) inherit it. Resolves with the actors that applied it.
   */
  setLogLevel(level: LogLevel): Promise<{ level: LogLevel; applied: ('supervisor' | ActorName)[] }>;
}

export const SUPERVISOR_DEADLINES_MS = {
  /** A scrape: anything slower is an outage of the metrics endpoint. */
  metricsText: 5_000,
  setLogLevel: 10_000,
} as const satisfies Deadlines<SupervisorApi>;
