import { z } from 'zod';
import { isSha256Hex } from '../../../shared/hash.js';
import { firstProblem } from '../../../shared/input.js';
import { isPercent, parseRolloutPlan, planJson, type RolloutStep } from '../../../shared/rollout-plan.js';
import type { PausedReason, Rollout, RolloutState, TargetRef } from './rollout.js';

// A rollout as `store.state_file` records it, with everything a restart needs to go on where
// it stopped: times in milliseconds, the stable target with its label and size, the held
// targets. Read back with the same checks as a publish, so a hand-edited file cannot bring in
// a rollout the API would have refused: a zod decoder for its shape, then the checks that span
// fields.

export interface PersistedRollout {
  target: TargetRef;
  stable: TargetRef | null;
  steps: RolloutStep[];
  step_interval: string;
  max_failure_rate: number;
  min_reports: number;
  /** Absent in files written before group steps: the index of the percent then. */
  step?: number;
  start_at?: number;
  window?: unknown;
  percent: number;
  state: RolloutState;
  paused_reason: PausedReason | null;
  rollback: boolean;
  started_at_ms: number;
  health_since_ms: number;
  next_step_at_ms: number | null;
  reports: { success: number; failure: number };
  held: string[];
}

export function encodeRollout(r: Rollout): PersistedRollout {
  return {
    target: { ...r.target },
    stable: r.stable && { ...r.stable },
    ...(planJson(r.plan) as Pick<PersistedRollout, 'steps' | 'step_interval' | 'max_failure_rate' | 'min_reports' | 'start_at' | 'window'>),
    step: r.step,
    percent: r.percent,
    state: r.state,
    paused_reason: r.pausedReason,
    rollback: r.rollback,
    started_at_ms: r.startedAtMs,
    health_since_ms: r.healthSinceMs,
    next_step_at_ms: r.nextStepAtMs,
    reports: { ...r.reports },
    held: [...r.held],
  };
}

const STATES = ['scheduled', 'running', 'paused', 'complete', 'aborted'] as const satisfies readonly RolloutState[];

/** A value that passes `guard`, or an issue with `message` at its key path. */
export const checked = <T>(guard: (value: unknown) => value is T, message: string) => z.custom<T>(guard, { error: message });
export const isText = (v: unknown): v is string => typeof v === 'string' && v !== '';
/** A count, a size or a time: a non-negative safe integer. */
export const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
export const isHashList = (v: unknown): v is string[] => Array.isArray(v) && v.every(isSha256Hex);

const targetRef = z.object({
  hash: checked(isSha256Hex, 'must be 64 lowercase hex characters'),
  version: checked(isText, 'must be a non-empty string'),
  size: checked(isCount, 'must be a non-negative integer'),
}, { error: 'must be an object' });

const time = checked(isCount, 'must be a time in milliseconds');

/** The shape of a recorded rollout; what spans fields (the plan, the state's rules) is checked after. */
const persistedRollout = z.object({
  target: targetRef,
  stable: targetRef.nullable(),
  steps: z.unknown().optional(),
  step_interval: z.unknown().optional(),
  max_failure_rate: z.unknown().optional(),
  min_reports: z.unknown().optional(),
  start_at: z.unknown().optional(),
  window: z.unknown().optional(),
  step: checked(isCount, 'must be a step index').optional(),
  percent: checked(isPercent, 'must be a number from 0 to 100'),
  state: z.enum(STATES, { error: `must be one of ${STATES.join(', ')}` }),
  paused_reason: z.enum(['failure_rate', 'operator'], { error: 'does not fit the state' }).nullable(),
  rollback: z.boolean({ error: 'must be true or false' }),
  started_at_ms: time,
  health_since_ms: time,
  next_step_at_ms: time.nullable(),
  reports: z.object({
    success: checked(isCount, 'must be a count'),
    failure: checked(isCount, 'must be a count'),
  }, { error: 'must hold success and failure counts' }),
  held: checked(isHashList, 'must be a list of hashes'),
}, { error: 'is not an object' });

/** Throws with the problem (the caller names the file and the track); `trackHash` is the track's target. */
export function decodeRollout(value: unknown, trackHash: string): Rollout {
  const parsed = persistedRollout.safeParse(value);
  if (!parsed.success) throw new Error(firstProblem(parsed.error.issues));
  const r = parsed.data;
  let plan;
  try {
    plan = parseRolloutPlan({
      steps: r.steps, step_interval: r.step_interval, max_failure_rate: r.max_failure_rate, min_reports: r.min_reports,
      ...(r.start_at !== undefined ? { start_at: r.start_at } : {}), ...(r.window !== undefined ? { window: r.window } : {}),
    });
  } catch (err) {
    throw new Error((err as Error).message, { cause: err });
  }
  if (r.target.hash !== trackHash) throw new Error(`target.hash is not the track's hash ${trackHash}`);
  const pausedReason = r.paused_reason;
  if (r.state === 'paused' ? pausedReason === null : pausedReason !== null) throw new Error('paused_reason does not fit the state');
  const timed = r.state === 'scheduled' || (r.state === 'running' && plan.stepIntervalMs !== null);
  if (timed !== (r.next_step_at_ms !== null)) throw new Error('next_step_at_ms is set exactly when the rollout is scheduled or runs on a timer');
  const step = r.step ?? Math.max(0, plan.steps.indexOf(r.percent));
  if (step >= plan.steps.length) throw new Error('step is past the last step');
  return {
    target: r.target, stable: r.stable, plan, step, percent: r.percent, state: r.state, pausedReason, rollback: r.rollback,
    startedAtMs: r.started_at_ms, healthSinceMs: r.health_since_ms, nextStepAtMs: r.next_step_at_ms, reports: r.reports, held: [...r.held],
  };
}
