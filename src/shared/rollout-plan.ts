import { parseDuration } from './duration.js';
import { UpdaterError } from './errors.js';

// The `rollout` object of `POST /admin/artifacts` (docs/rollouts.md, "Start a rollout"), checked
// at the boundary. Every problem is INVALID_ROLLOUT (400) naming the field.

/** The `rollout` object of a publish, validated. */
export interface RolloutPlan {
  /** Percents, strictly rising, the last one 100. */
  readonly steps: readonly number[];
  /** Echoed as given (a duration string). */
  readonly stepInterval: string;
  readonly stepIntervalMs: number;
  /** 0..1: the share of failed reports above which the rollout pauses itself. */
  readonly maxFailureRate: number;
  /** Reports needed before the failure rate is judged. */
  readonly minReports: number;
}

export const ROLLOUT_DEFAULTS = { stepInterval: '1h', maxFailureRate: 0.1, minReports: 10 } as const;
const ROLLOUT_FIELDS = ['steps', 'step_interval', 'max_failure_rate', 'min_reports'];
const MAX_STEPS = 20;
const MIN_STEP_INTERVAL_MS = 1000;
const MAX_STEP_INTERVAL_MS = 365 * 24 * 3_600_000;
const MAX_MIN_REPORTS = 10_000_000;

function fail(field: string, problem: string): never {
  throw new UpdaterError('INVALID_ROLLOUT', `rollout.${field} ${problem}`, { field: `rollout.${field}` });
}

/** A percent as the API takes it: a number from 0 to 100 with at most two decimals (the cohort's resolution). */
export function isPercent(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 100 && Math.abs(value * 100 - Math.round(value * 100)) < 1e-9;
}

export function parseRolloutPlan(value: unknown): RolloutPlan {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UpdaterError('INVALID_ROLLOUT', 'rollout must be an object', { field: 'rollout' });
  const fields = value as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!ROLLOUT_FIELDS.includes(key)) fail(key, `is not a known field (known: ${ROLLOUT_FIELDS.join(', ')})`);
  }
  const steps = fields.steps;
  if (!Array.isArray(steps) || steps.length === 0 || steps.length > MAX_STEPS) fail('steps', `must be a list of 1 to ${MAX_STEPS} percents`);
  steps.forEach((step, i) => {
    if (!isPercent(step) || step === 0) fail(`steps[${i}]`, 'must be a percent above 0 and at most 100 (two decimals at most)');
    if (i > 0 && step <= steps[i - 1]) fail('steps', 'must rise strictly');
  });
  if (steps[steps.length - 1] !== 100) fail('steps', 'must end at 100');

  const stepInterval = fields.step_interval ?? ROLLOUT_DEFAULTS.stepInterval;
  const stepIntervalMs = parseDuration(stepInterval);
  if (typeof stepInterval !== 'string' || stepIntervalMs === undefined) fail('step_interval', 'must be a duration like 30m or 1h');
  if (stepIntervalMs < MIN_STEP_INTERVAL_MS || stepIntervalMs > MAX_STEP_INTERVAL_MS) fail('step_interval', 'must be from 1s to 8760h');

  const maxFailureRate = fields.max_failure_rate ?? ROLLOUT_DEFAULTS.maxFailureRate;
  if (typeof maxFailureRate !== 'number' || !Number.isFinite(maxFailureRate) || maxFailureRate < 0 || maxFailureRate > 1) fail('max_failure_rate', 'must be a number from 0 to 1');

  const minReports = fields.min_reports ?? ROLLOUT_DEFAULTS.minReports;
  if (typeof minReports !== 'number' || !Number.isSafeInteger(minReports) || minReports < 0 || minReports > MAX_MIN_REPORTS) fail('min_reports', `must be an integer from 0 to ${MAX_MIN_REPORTS}`);

  return { steps: steps as number[], stepInterval, stepIntervalMs, maxFailureRate, minReports };
}

/** The group names a plan's steps name (a group a live rollout names cannot be deleted). */
export function groupsOf(_plan: RolloutPlan): string[] {
  return [];
}
