import { isSha256Hex } from '../../../shared/hash.js';
import { isPercent, parseRolloutPlan } from '../../../shared/rollout-plan.js';
import type { PausedReason, Rollout, RolloutState, TargetRef } from './rollout.js';

// A rollout as `store.state_file` records it, with everything a restart needs to go on where
// it stopped: times in milliseconds, the stable target with its label and size, the held
// targets. Read back with the same checks as a publish, so a hand-edited file cannot bring in
// a rollout the API would have refused.

export interface PersistedRollout {
  target: TargetRef;
  stable: TargetRef | null;
  steps: number[];
  step_interval: string;
  max_failure_rate: number;
  min_reports: number;
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
    steps: [...r.plan.steps],
    step_interval: r.plan.stepInterval,
    max_failure_rate: r.plan.maxFailureRate,
    min_reports: r.plan.minReports,
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

const STATES: readonly RolloutState[] = ['running', 'paused', 'complete', 'aborted'];

/** Throws with the problem (the caller names the file and the track); `trackHash` is the track's target. */
export function decodeRollout(value: unknown, trackHash: string): Rollout {
  const fail = (problem: string): never => {
    throw new Error(problem);
  };
  if (!isRecord(value)) return fail('is not an object');
  let plan;
  try {
    plan = parseRolloutPlan({ steps: value.steps, step_interval: value.step_interval, max_failure_rate: value.max_failure_rate, min_reports: value.min_reports });
  } catch (err) {
    return fail((err as Error).message);
  }
  const target = targetRef(value.target, 'target', fail);
  if (target.hash !== trackHash) fail(`target.hash is not the track's hash ${trackHash}`);
  const stable = value.stable === null ? null : targetRef(value.stable, 'stable', fail);
  if (!isPercent(value.percent)) fail('percent must be a number from 0 to 100');
  const state = value.state as RolloutState;
  if (!STATES.includes(state)) fail(`state must be one of ${STATES.join(', ')}`);
  const pausedReason = value.paused_reason as PausedReason | null;
  if (state === 'paused' ? pausedReason !== 'failure_rate' && pausedReason !== 'operator' : pausedReason !== null) fail('paused_reason does not fit the state');
  if (typeof value.rollback !== 'boolean') fail('rollback must be true or false');
  const time = (v: unknown, field: string) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : fail(`${field} must be a time in milliseconds`));
  const nextStepAtMs = value.next_step_at_ms === null ? null : time(value.next_step_at_ms, 'next_step_at_ms');
  if ((state === 'running') !== (nextStepAtMs !== null)) fail('next_step_at_ms is set exactly when the rollout runs');
  const reports = value.reports;
  const count = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  if (!isRecord(reports) || !count(reports.success) || !count(reports.failure)) fail('reports must hold success and failure counts');
  if (!Array.isArray(value.held) || !value.held.every(isSha256Hex)) fail('held must be a list of hashes');
  return {
    target, stable, plan, percent: value.percent as number, state, pausedReason, rollback: value.rollback as boolean,
    startedAtMs: time(value.started_at_ms, 'started_at_ms'), healthSinceMs: time(value.health_since_ms, 'health_since_ms'), nextStepAtMs,
    reports: { success: (reports as Record<string, number>).success!, failure: (reports as Record<string, number>).failure! },
    held: [...(value.held as string[])],
  };
}

function targetRef(value: unknown, field: string, fail: (problem: string) => never): TargetRef {
  if (!isRecord(value)) return fail(`${field} must be an object`);
  if (!isSha256Hex(value.hash)) fail(`${field}.hash must be 64 lowercase hex characters`);
  if (typeof value.version !== 'string' || value.version === '') fail(`${field}.version must be a non-empty string`);
  if (typeof value.size !== 'number' || !Number.isSafeInteger(value.size) || value.size < 0) fail(`${field}.size must be a non-negative integer`);
  return { hash: value.hash as string, version: value.version as string, size: value.size as number };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
