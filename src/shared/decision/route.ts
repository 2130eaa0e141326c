import { inCohort } from './cohort.js';
import type { RolloutStep } from '../rollout-plan.js';
import type { Attributes } from '../targeting/attributes.js';
import type { MaintenanceWindow } from '../targeting/window.js';
import { windowZone } from '../targeting/window.js';
import type { WindowClock } from './window-clock.js';

// Which target a heartbeat on a track with a staged rollout is answered toward
// (docs/rollouts.md, "Who gets the new build" and "Targeting"). Pure and shared: the
// manifester, which owns the rollouts, and every front-end, which answers from the
// manifester's snapshot (src/messages/decision-snapshot.ts), run this one function, so both
// answer alike.
//
//   on the target ─────────────────────────────▶ target (stable after an abort with rollback)
//   window closed for the device (not on it) ──▶ wait: no update, retry_after = until it opens
//   running, and a reached group step admits it,
//            or in the cohort of the percent ──▶ target
//   on a replaced rollout's target ────────────▶ stay
//   otherwise (scheduled, paused, aborted too) ▶ stable

/** What routing reads of a rollout: the manifester's Rollout has these fields, and so does a snapshot's. */
export interface RoutingFacts {
  readonly target: { readonly hash: string };
  readonly state: 'scheduled' | 'running' | 'paused' | 'complete' | 'aborted';
  /** The highest percent step reached (or the operator's). */
  readonly percent: number;
  /** Aborted with rollback: devices on the target are offered the stable target. */
  readonly rollback: boolean;
  /** Targets of replaced rollouts whose devices are not sent back (no downgrade). */
  readonly held: readonly string[];
  /** The plan's steps, and the index of the one reached: every group step up to it admits its members. */
  readonly plan: { readonly steps: readonly RolloutStep[]; readonly window?: MaintenanceWindow };
  readonly step: number;
}

/** What a device is judged by: its id, and on demand its group memberships and attributes (for a window in device time). */
export interface RoutedDevice {
  readonly deviceId: string;
  readonly versionHash: string;
  /** Whether the device is a member of the group now; absent: of none. */
  readonly memberOf?: (group: string) => boolean;
  readonly attributes?: Attributes;
}

export type Route = 'target' | 'stable' | 'stay' | 'wait';

export interface Routed {
  readonly route: Route;
  /** `wait`: seconds until the device's window opens. */
  readonly waitSeconds: number;
}

const TARGET: Routed = { route: 'target', waitSeconds: 0 };
const STABLE: Routed = { route: 'stable', waitSeconds: 0 };
const STAY: Routed = { route: 'stay', waitSeconds: 0 };

/** The rollout's target, the stable target, `stay` (a replaced rollout's target, kept), or `wait` (outside the window). */
export function routeDevice(r: RoutingFacts, device: RoutedDevice, clock: WindowClock): Routed {
  if (r.state === 'complete') return TARGET;
  if (device.versionHash === r.target.hash) return r.state === 'aborted' && r.rollback ? STABLE : TARGET;
  const window = r.plan.window;
  if (window && (r.state === 'running' || r.state === 'scheduled' || r.state === 'paused')) {
    const state = clock.state(window, windowZone(window, device.attributes));
    if (!state.open) return { route: 'wait', waitSeconds: state.opensInSeconds };
  }
  if (r.state === 'running' && (inCohort(device.deviceId, r.target.hash, r.percent) || admittedByGroup(r, device))) return TARGET;
  // No downgrade for a device on the target of a rollout this one replaced (not rolled back).
  if (r.held.includes(device.versionHash)) return STAY;
  return STABLE;
}

function admittedByGroup(r: RoutingFacts, device: RoutedDevice): boolean {
  if (!device.memberOf) return false;
  const steps = r.plan.steps;
  for (let i = 0; i <= r.step && i < steps.length; i++) {
    const step = steps[i]!;
    if (typeof step !== 'number' && device.memberOf(step.group)) return true;
  }
  return false;
}
