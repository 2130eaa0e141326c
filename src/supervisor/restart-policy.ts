// Supervision is a decision: given the recent crash times of an actor, restart it after a
// backoff or escalate (give up loudly). Pure, so it is tested without threads.

export interface RestartPolicy {
  /** Crashes tolerated within `windowMs` before the supervisor gives up. */
  readonly maxRestarts: number;
  readonly windowMs: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = { maxRestarts: 5, windowMs: 60_000, baseDelayMs: 100, maxDelayMs: 5_000 };

export type RestartDecision =
  | { readonly action: 'restart'; readonly delayMs: number; readonly recent: readonly number[] }
  | { readonly action: 'escalate'; readonly recent: readonly number[] };

export function decideRestart(previousCrashes: readonly number[], now: number, policy: RestartPolicy = DEFAULT_RESTART_POLICY): RestartDecision {
  const recent = [...previousCrashes.filter((t) => now - t < policy.windowMs), now];
  if (recent.length > policy.maxRestarts) return { action: 'escalate', recent };
  const delayMs = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (recent.length - 1));
  return { action: 'restart', delayMs, recent };
}

/**
 * What a restart that failed to start the actor counts as. A start refused for want of the
 * database (a cluster's PostgreSQL away, the embedded file's store full) says nothing about the
 * actor's own health: counted as crashes, a few seconds of outage after one crash would stop a
 * server that still answers devices from what it holds. Such a start is tried again at the
 * longest delay for as long as the outage lasts; any other failure is one more crash.
 */
export function afterFailedStart(code: string, policy: RestartPolicy = DEFAULT_RESTART_POLICY): { readonly action: 'retry'; readonly delayMs: number } | { readonly action: 'crash' } {
  return code === 'DATABASE_UNREACHABLE' ? { action: 'retry', delayMs: policy.maxDelayMs } : { action: 'crash' };
}
