// Retry timing (docs/agent.md, "Transports and retry") as pure functions, so the policy is tested without clocks.

/**
 * Exponential backoff with "equal jitter": the n-th consecutive failure waits between half
 * and all of min(max, base * 2^(n-1)). Jitter keeps a fleet that lost the server at the
 * same moment from coming back at the same moment.
 */
export function backoffDelay(failures: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  if (failures <= 0) return 0;
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 40));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** After a full disk the next try waits at least `diskFullFloorMs` (spec: 5 minutes). */
export function retryDelay(failures: number, diskFull: boolean, policy: { retryBaseMs: number; retryMaxMs: number; diskFullBackoffMs: number },
  random: () => number = Math.random): number {
  const delay = backoffDelay(failures, policy.retryBaseMs, policy.retryMaxMs, random);
  return diskFull ? Math.max(delay, policy.diskFullBackoffMs) : delay;
}
