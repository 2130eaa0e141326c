import { createHash } from 'node:crypto';

// The rollout cohort (docs/rollouts.md, "Who gets the new build"): a device is in the rollout of target T
// when uint32_be(sha256(device_id + ":" + T)[0..4]) % 10000 < percent * 100. It needs no
// stored state, so every replica decides alike, and a device once in stays in as the percent
// grows (its bucket does not depend on the percent).

/** The device's bucket for target T, 0..9999. */
export function cohortBucket(deviceId: string, targetHash: string): number {
  const digest = createHash('sha256').update(`${deviceId}:${targetHash}`, 'utf8').digest();
  return digest.readUInt32BE(0) % 10000;
}

export function inCohort(deviceId: string, targetHash: string, percent: number): boolean {
  if (percent >= 100) return true;
  if (percent <= 0) return false;
  return admitsBucket(cohortBucket(deviceId, targetHash), percent);
}

/**
 * Whether a percent admits a bucket. A percent has two decimals at most (rollout-plan.ts), so
 * percent * 100 stands for a whole number of hundredths; the product of binary floats may land
 * either side of it (0.07 * 100 is 7.000000000000001), so it is rounded, not compared as it is.
 */
export function admitsBucket(bucket: number, percent: number): boolean {
  return bucket < Math.round(percent * 100);
}
