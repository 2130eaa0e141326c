import { windowState, type MaintenanceWindow, type WindowState } from '../targeting/window.js';

// A rollout's maintenance window as the heartbeat path reads it: the state of each window in
// each zone, worked out through Intl once a second rather than once a heartbeat (a window
// opens and closes on whole minutes, and its retry_after is in whole seconds). Bounded by the
// windows of live rollouts times the zones devices name, and emptied every second.

export class WindowClock {
  private second = -1;
  private states = new Map<MaintenanceWindow, Map<string, WindowState>>();

  /** `now` is injectable: tests drive time through it. */
  constructor(private readonly now: () => number = Date.now) {}

  state(window: MaintenanceWindow, zone: string): WindowState {
    const nowMs = this.now();
    const second = Math.floor(nowMs / 1000);
    if (second !== this.second) {
      this.second = second;
      this.states = new Map();
    }
    let byZone = this.states.get(window);
    if (!byZone) this.states.set(window, (byZone = new Map()));
    let state = byZone.get(zone);
    if (!state) byZone.set(zone, (state = windowState(window, zone, nowMs)));
    return state;
  }
}
