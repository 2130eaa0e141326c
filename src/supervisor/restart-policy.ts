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
