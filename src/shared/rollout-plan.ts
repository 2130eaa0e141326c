import { parseDuration } from './duration.js';
import { UpdaterError } from './errors.js';
import { parseTargetName } from './targeting/names.js';
import { parseWindow, windowJson, type MaintenanceWindow } from './targeting/window.js';

// The `rollout` object of `POST /admin/artifacts` (docs/rollouts.md, "Start a rollout" and
// "Targeting"), checked at the boundary. Every problem is INVALID_ROLLOUT (400) naming the field.
// Whether a group step names a group that exists is the admin route's check (the fleet's groups).

/** A step: a percent of the fleet, or every member of a group. */
export type RolloutStep = number | { readonly group: string };

/** The `rollout` object of a publish, validated. */
export interface RolloutPlan {
  /** As given: percents strictly rising among themselves, the last step 100; groups named once each. */
  readonly steps: readonly RolloutStep[];
  /** Echoed as given (a duration string, or "manual"). */
  readonly stepInterval: string;
  /** null: manual steps (`"action":"advance"`). */
  readonly stepIntervalMs: number | null;
  /** Unix milliseconds before which nobody is offered the target (`start_at`, given in seconds); absent: at once. */
  readonly startAtMs?: number;
  /** Devices outside it are told to come back when it opens; the timer steps only inside it (read in UTC for `tz: "device"`). */
  readonly window?: MaintenanceWindow;
  /** 0..1: the share of failed reports above which the rollout pauses itself. */
  readonly maxFailureRate: number;
  /** Reports needed before the failure rate is judged. */
  readonly minReports: number;
}

export const ROLLOUT_DEFAULTS = { stepInterval: '1h', maxFailureRate: 0.1, minReports: 10 } as const;
const ROLLOUT_FIELDS = ['steps', 'step_interval', 'max_failure_rate', 'min_reports', 'start_at', 'window'];
/** Unix seconds up to the year 9999: a start time, not a typo of milliseconds. */
const MAX_START_AT = 253_402_300_799;
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
  const steps = parseSteps(fields.steps);

  const stepInterval = fields.step_interval ?? ROLLOUT_DEFAULTS.stepInterval;
  let stepIntervalMs: number | null = null;
  if (stepInterval !== 'manual') {
    const ms = parseDuration(stepInterval);
    if (typeof stepInterval !== 'string' || ms === undefined) fail('step_interval', 'must be a duration like 30m or 1h, or "manual"');
    if (ms < MIN_STEP_INTERVAL_MS || ms > MAX_STEP_INTERVAL_MS) fail('step_interval', 'must be from 1s to 8760h');
    stepIntervalMs = ms;
  }

  const maxFailureRate = fields.max_failure_rate ?? ROLLOUT_DEFAULTS.maxFailureRate;
  if (typeof maxFailureRate !== 'number' || !Number.isFinite(maxFailureRate) || maxFailureRate < 0 || maxFailureRate > 1) fail('max_failure_rate', 'must be a number from 0 to 1');

  const minReports = fields.min_reports ?? ROLLOUT_DEFAULTS.minReports;
  if (typeof minReports !== 'number' || !Number.isSafeInteger(minReports) || minReports < 0 || minReports > MAX_MIN_REPORTS) fail('min_reports', `must be an integer from 0 to ${MAX_MIN_REPORTS}`);

  const startAt = fields.start_at;
  if (startAt !== undefined && (typeof startAt !== 'number' || !Number.isSafeInteger(startAt) || startAt < 0 || startAt > MAX_START_AT)) {
    fail('start_at', 'must be a time in Unix seconds (an integer)');
  }
  const window = fields.window === undefined ? undefined : parseWindow(fields.window, 'rollout.window', 'INVALID_ROLLOUT');
  return {
    steps, stepInterval: stepInterval as string, stepIntervalMs, maxFailureRate, minReports,
    ...(startAt !== undefined ? { startAtMs: (startAt as number) * 1000 } : {}), ...(window ? { window } : {}),
  };
}

function parseSteps(steps: unknown): RolloutStep[] {
  if (!Array.isArray(steps) || steps.length === 0 || steps.length > MAX_STEPS) fail('steps', `must be a list of 1 to ${MAX_STEPS} steps: percents or {"group":"NAME"}`);
  const groups = new Set<string>();
  let lastPercent = 0;
  const out = steps.map((step: unknown, i): RolloutStep => {
    if (typeof step === 'object' && step !== null && !Array.isArray(step)) {
      const keys = Object.keys(step);
      if (keys.length !== 1 || keys[0] !== 'group') fail(`steps[${i}]`, 'must be a percent or {"group":"NAME"}');
      const name = parseTargetName((step as { group: unknown }).group, `rollout.steps[${i}].group`, 'INVALID_ROLLOUT');
      if (groups.has(name)) fail(`steps[${i}].group`, `names ${JSON.stringify(name)} a second time`);
      groups.add(name);
      return { group: name };
    }
    if (!isPercent(step) || step === 0) fail(`steps[${i}]`, 'must be a percent above 0 and at most 100 (two decimals at most), or {"group":"NAME"}');
    if (step <= lastPercent) fail('steps', 'must rise strictly (the percents among them)');
    lastPercent = step;
    return step;
  });
  if (out[out.length - 1] !== 100) fail('steps', 'must end at 100');
  return out;
}

/** The plan as the API shows it and the state file keeps it (the `rollout` object of a publish). */
export function planJson(plan: RolloutPlan): Record<string, unknown> {
  return {
    steps: plan.steps.map((s) => (typeof s === 'number' ? s : { group: s.group })), step_interval: plan.stepInterval,
    max_failure_rate: plan.maxFailureRate, min_reports: plan.minReports,
    ...(plan.startAtMs !== undefined ? { start_at: Math.floor(plan.startAtMs / 1000) } : {}),
    ...(plan.window ? { window: windowJson(plan.window) } : {}),
  };
}

/** The highest percent among the first `count` steps (0 when none is a percent). */
export function percentReached(plan: RolloutPlan, count: number): number {
  let percent = 0;
  for (const step of plan.steps.slice(0, count)) if (typeof step === 'number' && step > percent) percent = step;
  return percent;
}

/** The group names a plan's steps name (a group a live rollout names cannot be deleted). */
export function groupsOf(plan: RolloutPlan): string[] {
  return plan.steps.flatMap((s) => (typeof s === 'number' ? [] : [s.group]));
}
