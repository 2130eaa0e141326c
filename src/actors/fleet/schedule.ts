import type { Logger } from '../../shared/logger.js';

// The fleet actor's timers: every periodic job (flush, retention, gauges, the identity polls)
// runs through one of these, so drain clears them all in one place and no job runs twice at
// a time.

/** `fn` every `ms` from start to start (at once after a run that took longer), never two runs at a time. */
export type Every = (ms: number, what: string, fn: () => Promise<void>) => void;

export interface Schedule {
  /** `fn` once after `ms`, unless the schedule is stopped first. */
  later(ms: number, fn: () => void): void;
  every: Every;
  readonly stopped: boolean;
  /** Clears every pending timer; nothing runs after it. */
  stop(): void;
}

export function createSchedule(log: Logger): Schedule {
  let stopped = false;
  const timers = new Set<NodeJS.Timeout>();
  /** A timer drain clears; it forgets itself once it fires (a list of every timer ever set grew by one a flush). */
  const later = (ms: number, fn: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  };
  const every: Every = (ms, what, fn) => {
    const run = () => {
      if (stopped) return;
      const started = Date.now();
      fn().catch((err) => log.error({ err }, `${what} failed`)).finally(() => {
        if (!stopped) later(Math.max(0, ms - (Date.now() - started)), run);
      });
    };
    later(ms, run);
  };
  return {
    later,
    every,
    get stopped() { return stopped; },
    stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
    },
  };
}
