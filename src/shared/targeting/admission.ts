import type { DeviceFacts, TargetFilter } from './filter.js';
import { matches } from './filter.js';
import { windowState, windowZone, type MaintenanceWindow, type WindowState } from './window.js';

// Whether a rollout with targeting admits a device now (docs/rollouts.md, "Targeting"): pure,
// for the heartbeat decision to call with what the deciding thread knows of the device. It
// answers only the targeting question; what "offer" and "cohort-out" are answered with (the
// target, the stable target, no downgrade, rollback) stays the rollout's (routeDevice).
//
//   device on T ──────────────────────────────▶ offer (a download already offered is served), cohort-out after an abort with rollback
//   live rollout with a window, outside it ──▶ wait(seconds until the device's window opens)
//   running, member of a group step reached ──▶ offer
//   running, in the cohort of the percent ───▶ offer
//   anything else (scheduled, paused, aborted, outside) ──▶ cohort-out

export type AdmissionState = 'scheduled' | 'running' | 'paused' | 'complete' | 'aborted';

export interface AdmissionRollout {
  readonly state: AdmissionState;
  readonly targetHash: string;
  /** Aborted with rollback: devices on T are sent back. */
  readonly rollback: boolean;
  /** The filters of the group steps reached (at most the plan's steps). */
  readonly groups: readonly { readonly name: string; readonly filter: TargetFilter }[];
  /** The highest percent step reached, or the operator's percent (0 when none is). */
  readonly percent: number;
  readonly window?: MaintenanceWindow;
}

export interface AdmissionDevice extends DeviceFacts {
  readonly deviceId: string;
}

export type Admission =
  | { readonly kind: 'offer'; readonly group?: string }
  | { readonly kind: 'cohort-out' }
  | { readonly kind: 'wait'; readonly seconds: number };

/** The percent cohort, injected: the rollout's own (src/actors/manifester/rollout/cohort.ts). */
export type Cohort = (deviceId: string, targetHash: string, percent: number) => boolean;

const OFFER: Admission = { kind: 'offer' };
const OUT: Admission = { kind: 'cohort-out' };

export function admit(r: AdmissionRollout, device: AdmissionDevice, inCohort: Cohort, nowMs: number, clock: WindowClock = DIRECT): Admission {
  if (r.state === 'complete') return OFFER;
  if (device.versionHash === r.targetHash) return r.state === 'aborted' && r.rollback ? OUT : OFFER;
  if (r.state === 'aborted') return OUT;
  if (r.window) {
    const now = clock.state(r.window, windowZone(r.window, device.attributes), nowMs);
    if (!now.open) return { kind: 'wait', seconds: now.opensInSeconds };
  }
  if (r.state !== 'running') return OUT;
  for (const group of r.groups) if (matches(group.filter, device, nowMs)) return { kind: 'offer', group: group.name };
  return inCohort(device.deviceId, r.targetHash, r.percent) ? OFFER : OUT;
}

/** How admit reads a window: directly, or through a WindowMemo. */
export interface WindowClock {
  state(window: MaintenanceWindow, zone: string, nowMs: number): WindowState;
}

const DIRECT: WindowClock = { state: windowState };

/** Zones remembered per window: every zone Intl knows is a few hundred; past this the memo starts again. */
const MAX_ZONES_PER_WINDOW = 1024;

/**
 * windowState at heartbeat rate: Intl is asked once per window, zone and UTC minute. The answer
 * cannot change within a minute of UTC: window bounds are whole local minutes and every zone's
 * offset is a whole number of minutes, so local minutes begin with UTC ones; the instant it
 * next opens is the same for the whole minute, and the seconds until then are counted from it.
 */
export class WindowMemo implements WindowClock {
  private readonly memo = new WeakMap<MaintenanceWindow, Map<string, { minute: number; open: boolean; opensAtMs: number }>>();

  state(window: MaintenanceWindow, zone: string, nowMs: number): WindowState {
    const minute = Math.floor(nowMs / 60_000);
    let zones = this.memo.get(window);
    if (!zones) this.memo.set(window, (zones = new Map()));
    let known = zones.get(zone);
    if (known?.minute !== minute) {
      const start = minute * 60_000;
      const fresh = windowState(window, zone, start);
      known = { minute, open: fresh.open, opensAtMs: start + fresh.opensInSeconds * 1000 };
      if (zones.size >= MAX_ZONES_PER_WINDOW) zones.clear();
      zones.set(zone, known);
    }
    return known.open ? { open: true, opensInSeconds: 0 } : { open: false, opensInSeconds: Math.max(1, Math.ceil((known.opensAtMs - nowMs) / 1000)) };
  }
}
