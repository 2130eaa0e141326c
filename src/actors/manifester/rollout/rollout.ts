import type { RolloutView } from '../../../messages/manifester.js';
import { UpdaterError } from '../../../shared/errors.js';
import type { RolloutPlan } from '../../../shared/rollout-plan.js';

// The staged-rollout state machine (docs/rollouts.md). Pure: every function
// takes the rollout and the time and returns the next rollout (the same object when nothing
// changes), so the manifester persists exactly what changed and tests need no clock.
//
//              timer: next step ────┐      percent (operator)
//                                   ▼      │
//   publish ─▶ running ──(step 100, complete)──▶ complete   (T becomes the stable target)
//               │   ▲ resume
//     pause /   ▼   │
//   failure ─▶ paused ──────────(complete)──────▶ complete
//   rate        │
//   running or paused ──(abort [rollback], or a new publish)──▶ aborted

export interface TargetRef {
  readonly hash: string;
  readonly version: string;
  readonly size: number;
}

export type RolloutState = 'running' | 'paused' | 'complete' | 'aborted';
export type PausedReason = 'failure_rate' | 'operator';
export type RolloutAction = 'pause' | 'resume' | 'abort' | 'complete';

export interface ReportCounts {
  readonly success: number;
  readonly failure: number;
}

export interface Rollout {
  readonly target: TargetRef;
  /** The last target of the track that reached 100 %; null when none did yet. */
  readonly stable: TargetRef | null;
  readonly plan: RolloutPlan;
  readonly percent: number;
  readonly state: RolloutState;
  readonly pausedReason: PausedReason | null;
  /** Aborted with rollback: devices on the target are offered the stable target. */
  readonly rollback: boolean;
  readonly startedAtMs: number;
  /** Reports received from this time on count toward an automatic pause (start, or the last resume). */
  readonly healthSinceMs: number;
  readonly nextStepAtMs: number | null;
  /** Boot-confirmed reports for the target since healthSinceMs, the latest per device. */
  readonly reports: ReportCounts;
  /**
   * Targets of earlier rollouts that this one replaced without a rollback: devices on them are
   * not sent back to the stable target either (no downgrade), only forward to this target.
   */
  readonly held: readonly string[];
}

/** How many replaced targets are remembered as held. */
const MAX_HELD = 8;

export function startRollout(plan: RolloutPlan, target: TargetRef, previous: { stable: TargetRef | null; held: readonly string[] }, nowMs: number): Rollout {
  const held = previous.held.filter((h) => h !== target.hash && h !== previous.stable?.hash).slice(0, MAX_HELD);
  const first = plan.steps[0]!;
  const base: Rollout = {
    target, stable: previous.stable, plan, percent: first, state: 'running', pausedReason: null, rollback: false,
    startedAtMs: nowMs, healthSinceMs: nowMs, nextStepAtMs: nowMs + plan.stepIntervalMs, reports: { success: 0, failure: 0 }, held,
  };
  return first >= 100 ? completed(base) : base;
}

/**
 * What a new rollout on a track starts from: the stable target (the track's target, unless
 * that was itself still rolling out) and the targets that must not be downgraded.
 */
export function successorBasis(track: TargetRef & { readonly rollout?: Rollout }): { stable: TargetRef | null; held: string[] } {
  const r = track.rollout;
  if (!r || r.state === 'complete') return { stable: { hash: track.hash, version: track.version, size: track.size }, held: [] };
  return { stable: r.stable, held: r.rollback ? [...r.held] : [r.target.hash, ...r.held] };
}

/** An operator's action; ROLLOUT_CONFLICT (409) when the state forbids it. */
export function applyAction(r: Rollout, action: RolloutAction, rollback: boolean, nowMs: number): Rollout {
  if (rollback && action !== 'abort') throw new UpdaterError('INVALID_FIELD', 'rollback goes only with the action abort', { field: 'rollback' });
  switch (action) {
    case 'pause':
      if (r.state !== 'running') throw conflict(r, action);
      return { ...r, state: 'paused', pausedReason: 'operator', nextStepAtMs: null };
    case 'resume':
      if (r.state !== 'paused') throw conflict(r, action);
      // Reports from before the resume (the ones that paused it) no longer count.
      return { ...r, state: 'running', pausedReason: null, healthSinceMs: nowMs, nextStepAtMs: nowMs + r.plan.stepIntervalMs, reports: { success: 0, failure: 0 } };
    case 'complete':
      if (r.state !== 'running' && r.state !== 'paused') throw conflict(r, action);
      return completed(r);
    case 'abort':
      if (r.state === 'running' || r.state === 'paused') return aborted(r, rollback);
      // An aborted rollout can still be rolled back, once.
      if (r.state === 'aborted' && rollback && !r.rollback) return { ...r, rollback: true };
      throw conflict(r, action);
  }
}

/** The operator sets the percent; 100 completes. Keeps a paused rollout paused. */
export function setPercent(r: Rollout, percent: number, nowMs: number): Rollout {
  if (r.state !== 'running' && r.state !== 'paused') throw conflict(r, 'percent');
  if (percent >= 100) return completed(r);
  return { ...r, percent, nextStepAtMs: r.state === 'running' ? nowMs + r.plan.stepIntervalMs : null };
}

/**
 * Steps on the timer: a running rollout whose step is due moves to the first step above its
 * percent. One step per call, and the interval starts again from now: after a long stop the
 * rollout does not leap over steps whose health nobody watched.
 */
export function advance(r: Rollout, nowMs: number): Rollout {
  if (r.state !== 'running' || r.nextStepAtMs === null || nowMs < r.nextStepAtMs) return r;
  const next = r.plan.steps.find((s) => s > r.percent) ?? 100;
  if (next >= 100) return completed(r);
  return { ...r, percent: next, nextStepAtMs: nowMs + r.plan.stepIntervalMs };
}

/**
 * Records the health counts of a running rollout, and pauses it when at least min_reports are
 * in and failures / reports exceed max_failure_rate.
 */
export function judgeHealth(r: Rollout, counts: ReportCounts): Rollout {
  if (r.state !== 'running') return r;
  const total = counts.success + counts.failure;
  const unhealthy = total > 0 && total >= r.plan.minReports && counts.failure / total > r.plan.maxFailureRate;
  if (unhealthy) return { ...r, reports: counts, state: 'paused', pausedReason: 'failure_rate', nextStepAtMs: null };
  if (counts.success === r.reports.success && counts.failure === r.reports.failure) return r;
  return { ...r, reports: counts };
}

/** A new publish on the track replaces this rollout: it is aborted, without rollback. */
export function replaced(r: Rollout): Rollout {
  return r.state === 'running' || r.state === 'paused' ? aborted(r, false) : r;
}

/** Whether devices are still being sent somewhere other than the target (the stable target matters). */
export function isActive(r: Rollout): boolean {
  return r.state !== 'complete';
}

export function rolloutView(r: Rollout): RolloutView {
  return {
    target_hash: r.target.hash,
    target_version: r.target.version,
    stable_hash: r.stable?.hash ?? null,
    percent: r.percent,
    steps: [...r.plan.steps],
    step_interval: r.plan.stepInterval,
    max_failure_rate: r.plan.maxFailureRate,
    min_reports: r.plan.minReports,
    state: r.state,
    paused_reason: r.pausedReason,
    rollback: r.rollback,
    reports: { ...r.reports },
    started_at: Math.floor(r.startedAtMs / 1000),
    next_step_at: r.nextStepAtMs === null ? null : Math.ceil(r.nextStepAtMs / 1000),
  };
}

/** A republish of the same bytes under another version label. */
export function relabel(r: Rollout, version: string): Rollout {
  const label = (ref: TargetRef | null) => (ref && ref.hash === r.target.hash ? { ...ref, version } : ref);
  return { ...r, target: { ...r.target, version }, stable: label(r.stable) };
}

function completed(r: Rollout): Rollout {
  return { ...r, percent: 100, state: 'complete', pausedReason: null, nextStepAtMs: null, stable: r.target, held: [] };
}

function aborted(r: Rollout, rollback: boolean): Rollout {
  return { ...r, state: 'aborted', pausedReason: null, nextStepAtMs: null, rollback };
}

function conflict(r: Rollout, action: string): UpdaterError {
  return new UpdaterError('ROLLOUT_CONFLICT', `the rollout of ${r.target.hash} is ${r.state}; ${action} is not allowed in that state`, { state: r.state, action });
}
