import type { RolloutView } from '../../../messages/manifester.js';
import { UpdaterError } from '../../../shared/errors.js';
import { percentReached, planJson, type RolloutPlan } from '../../../shared/rollout-plan.js';
import { windowJson, windowState, windowZone } from '../../../shared/targeting/window.js';
import { inCohort } from './cohort.js';

// The staged-rollout state machine (docs/rollouts.md). Pure: every function
// takes the rollout and the time and returns the next rollout (the same object when nothing
// changes), so the manifester persists exactly what changed and tests need no clock.
//
//                        timer (inside the window) or advance: next step ──┐      percent (operator)
//                                                                          ▼      │
//   publish ─▶ [scheduled ──start_at──▶] running ──(step 100, complete)──▶ complete   (T becomes the stable target)
//               │   ▲ resume
//     pause /   ▼   │
//   failure ─▶ paused ──────────(complete)──────▶ complete
//   rate        │
//   running or paused ──(abort [rollback], or a new publish)──▶ aborted
//   scheduled: pause, abort and complete apply as to a running rollout; a resume before start_at schedules it again

export interface TargetRef {
  readonly hash: string;
  readonly version: string;
  readonly size: number;
}

export type RolloutState = 'scheduled' | 'running' | 'paused' | 'complete' | 'aborted';
export type PausedReason = 'failure_rate' | 'operator';
export type RolloutAction = 'pause' | 'resume' | 'abort' | 'complete' | 'advance';

export interface ReportCounts {
  readonly success: number;
  readonly failure: number;
}

export interface Rollout {
  readonly target: TargetRef;
  /** The last target of the track that reached 100 %; null when none did yet. */
  readonly stable: TargetRef | null;
  readonly plan: RolloutPlan;
  /** The index of the step reached (0 while scheduled). */
  readonly step: number;
  /** The highest percent step reached (0 when none is), or the operator's. */
  readonly percent: number;
  readonly state: RolloutState;
  readonly pausedReason: PausedReason | null;
  /** Aborted with rollback: devices on the target are offered the stable target. */
  readonly rollback: boolean;
  readonly startedAtMs: number;
  /** Reports received from this time on count toward an automatic pause (start, or the last resume). */
  readonly healthSinceMs: number;
  /** Running: when the timer steps next (null for manual steps); scheduled: when it starts; otherwise null. */
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
  const base: Rollout = {
    target, stable: previous.stable, plan, step: 0, percent: 0, state: 'scheduled', pausedReason: null, rollback: false,
    startedAtMs: nowMs, healthSinceMs: nowMs, nextStepAtMs: plan.startAtMs ?? nowMs, reports: { success: 0, failure: 0 }, held,
  };
  return plan.startAtMs !== undefined && plan.startAtMs > nowMs ? base : begin(base, nowMs);
}

/** From scheduled (or paused before its start) to running at the first step. */
function begin(r: Rollout, nowMs: number): Rollout {
  return atStep({ ...r, state: 'running', healthSinceMs: nowMs, reports: { success: 0, failure: 0 } }, 0, nowMs);
}

/** At step `index`: its percent reached, the timer from now; the last step (100) completes. */
function atStep(r: Rollout, index: number, nowMs: number): Rollout {
  const steps = r.plan.steps;
  if (index >= steps.length - 1) return completed(r);
  const percent = Math.max(percentReached(r.plan, index + 1), index > r.step ? r.percent : 0);
  return { ...r, step: index, percent, nextStepAtMs: timer(r, nowMs) };
}

function timer(r: Rollout, nowMs: number): number | null {
  return r.plan.stepIntervalMs === null ? null : nowMs + r.plan.stepIntervalMs;
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
      if (r.state !== 'running' && r.state !== 'scheduled') throw conflict(r, action);
      return { ...r, state: 'paused', pausedReason: 'operator', nextStepAtMs: null };
    case 'resume':
      if (r.state !== 'paused') throw conflict(r, action);
      // Paused before its start time: scheduled again.
      if (r.plan.startAtMs !== undefined && nowMs < r.plan.startAtMs) return { ...r, state: 'scheduled', pausedReason: null, nextStepAtMs: r.plan.startAtMs };
      // Reports from before the resume (the ones that paused it) no longer count.
      return {
        ...r, state: 'running', pausedReason: null, healthSinceMs: nowMs, nextStepAtMs: timer(r, nowMs), reports: { success: 0, failure: 0 },
        percent: Math.max(r.percent, percentReached(r.plan, r.step + 1)),
      };
    case 'advance':
      if (r.state !== 'running') throw conflict(r, action);
      return atStep(r, r.step + 1, nowMs);
    case 'complete':
      if (r.state !== 'running' && r.state !== 'paused' && r.state !== 'scheduled') throw conflict(r, action);
      return completed(r);
    case 'abort':
      if (r.state === 'running' || r.state === 'paused' || r.state === 'scheduled') return aborted(r, rollback);
      // An aborted rollout can still be rolled back, once.
      if (r.state === 'aborted' && rollback && !r.rollback) return { ...r, rollback: true };
      throw conflict(r, action);
  }
}

/** The operator sets the percent; 100 completes. Keeps a paused rollout paused. */
export function setPercent(r: Rollout, percent: number, nowMs: number): Rollout {
  if (r.state !== 'running' && r.state !== 'paused') throw conflict(r, 'percent');
  if (percent >= 100) return completed(r);
  return { ...r, percent, nextStepAtMs: r.state === 'running' ? timer(r, nowMs) : null };
}

/**
 * The timer: a scheduled rollout whose start time has come runs from its first step; a running
 * one whose step is due moves to the next step, but only inside its window (read in its zone,
 * UTC for device time). One step per call, and the interval starts again from now: after a long
 * stop the rollout does not leap over steps whose health nobody watched.
 */
export function advance(r: Rollout, nowMs: number): Rollout {
  if (r.nextStepAtMs === null || nowMs < r.nextStepAtMs) return r;
  if (r.state === 'scheduled') return begin(r, nowMs);
  if (r.state !== 'running') return r;
  const window = r.plan.window;
  if (window && !windowState(window, windowZone(window, undefined), nowMs).open) return r;
  return atStep(r, r.step + 1, nowMs);
}

/** When the timer would move the rollout next, as a view shows it: a due step waits for the window to open. */
function nextMoveMs(r: Rollout, nowMs: number): number | null {
  const window = r.plan.window;
  if (r.state !== 'running' || r.nextStepAtMs === null || !window) return r.nextStepAtMs;
  const at = Math.max(r.nextStepAtMs, nowMs);
  const state = windowState(window, windowZone(window, undefined), at);
  return state.open ? r.nextStepAtMs : at + state.opensInSeconds * 1000;
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
  return r.state === 'running' || r.state === 'paused' || r.state === 'scheduled' ? aborted(r, false) : r;
}

/** Which target a device is answered with: the rollout's target or the stable one. */
export function routeDevice(r: Rollout, deviceId: string, versionHash: string): 'target' | 'stable' | 'stay' {
  if (r.state === 'complete') return 'target';
  if (versionHash === r.target.hash) return r.state === 'aborted' && r.rollback ? 'stable' : 'target';
  if (r.state === 'running' && inCohort(deviceId, r.target.hash, r.percent)) return 'target';
  // No downgrade for a device on the target of a rollout this one replaced (not rolled back).
  if (r.held.includes(versionHash)) return 'stay';
  return 'stable';
}

/** Whether devices are still being sent somewhere other than the target (the stable target matters). */
export function isActive(r: Rollout): boolean {
  return r.state !== 'complete';
}

export function rolloutView(r: Rollout, nowMs = Date.now()): RolloutView {
  const next = nextMoveMs(r, nowMs);
  return {
    target_hash: r.target.hash,
    target_version: r.target.version,
    stable_hash: r.stable?.hash ?? null,
    percent: r.percent,
    steps: planJson(r.plan).steps as RolloutView['steps'],
    step: r.step,
    step_interval: r.plan.stepInterval,
    start_at: r.plan.startAtMs === undefined ? null : Math.floor(r.plan.startAtMs / 1000),
    window: r.plan.window ? windowJson(r.plan.window) as unknown as RolloutView['window'] : null,
    max_failure_rate: r.plan.maxFailureRate,
    min_reports: r.plan.minReports,
    state: r.state,
    paused_reason: r.pausedReason,
    rollback: r.rollback,
    reports: { ...r.reports },
    started_at: Math.floor(r.startedAtMs / 1000),
    next_step_at: next === null ? null : Math.ceil(next / 1000),
  };
}

/** A republish of the same bytes under another version label. */
export function relabel(r: Rollout, version: string): Rollout {
  const label = (ref: TargetRef | null) => (ref && ref.hash === r.target.hash ? { ...ref, version } : ref);
  return { ...r, target: { ...r.target, version }, stable: label(r.stable) };
}

function completed(r: Rollout): Rollout {
  return { ...r, step: r.plan.steps.length - 1, percent: 100, state: 'complete', pausedReason: null, nextStepAtMs: null, stable: r.target, held: [] };
}

function aborted(r: Rollout, rollback: boolean): Rollout {
  return { ...r, state: 'aborted', pausedReason: null, nextStepAtMs: null, rollback };
}

function conflict(r: Rollout, action: string): UpdaterError {
  return new UpdaterError('ROLLOUT_CONFLICT', `the rollout of ${r.target.hash} is ${r.state}; ${action} is not allowed in that state`, { state: r.state, action });
}
