import { windowState, type MaintenanceWindow, type WindowState } from '../targeting/window.js';

// A rollout's maintenance window at heartbeat rate: Intl is asked once per window, zone and
// UTC minute (about 38 µs a question; a remembered answer 53 ns). The answer cannot change
// within a minute of UTC: window bounds are whole local minutes and every zone's offset is a
// whole number of minutes, so local minutes begin with UTC ones; the instant the window next
// opens is the same for the whole minute, and the seconds until then are counted from it.

/** Zones remembered per window: every zone Intl knows is a few hundred; past this the memo starts again. */
const MAX_ZONES_PER_WINDOW = 1024;

export class WindowClock {
  private readonly memo = new WeakMap<MaintenanceWindow, Map<string, { minute: number; open: boolean; opensAtMs: number }>>();

  /** `now` is injectable: tests drive time through it. */
  constructor(private readonly now: () => number = Date.now) {}

  state(window: MaintenanceWindow, zone: string): WindowState {
    const nowMs = this.now();
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
