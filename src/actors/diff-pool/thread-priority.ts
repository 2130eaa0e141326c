import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

// Background work at a lower CPU priority than the event loops that answer devices. A diff
// generation is seconds of CPU; on a core it shares with the front-ends and the manifester,
// the scheduler would give it an equal slice and every heartbeat queued behind it would wait.
// Linux keeps a nice value per thread: this thread's id is read from /proc/thread-self, and
// a process it starts (the native engine) inherits the value.

/** Nice value of the diff pool's threads: they yield to the event loops, not to each other. */
export const BACKGROUND_NICE = 10;

/**
 * Lowers the calling thread's priority (raising a nice value needs no privilege). Returns the
 * thread's nice value afterwards, or undefined where threads cannot be told apart (not Linux).
 */
export function lowerThisThreadsPriority(nice = BACKGROUND_NICE): number | undefined {
  let tid: number;
  try {
    tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(tid) || tid <= 0) return undefined;
  try {
    if (getPriority(tid) < nice) setPriority(tid, nice);
    return getPriority(tid);
  } catch {
    // A sandbox that forbids it: the work still runs, at the default priority.
    return undefined;
  }
}
