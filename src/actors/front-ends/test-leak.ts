import type { Logger } from '../../shared/logger.js';

// A test-only fault hook: a leak planted on purpose, so the soak's test can prove that the
// soak fails on one (a leak detector that has never caught a leak proves nothing). It is read
// only when UPDATER_TEST_HOOKS=1 is set as well, so an operator's stray variable cannot turn
// it on, and it logs loudly when it does.
//
//   UPDATER_TEST_HOOKS=1 UPDATER_TEST_LEAK_BYTES_PER_HEARTBEAT=2048 updater serve …
//
// makes the HTTP front-end keep about that many bytes of its own heap for every heartbeat it
// answers, for as long as it runs (the busiest thread: since the front-ends answer the steady
// state themselves, the manifester no longer sees most heartbeats).

/** Returns the per-batch hook when the leak is planted, otherwise undefined (nothing runs). */
export function plantedLeak(log: Logger): ((heartbeats: number) => void) | undefined {
  if (process.env.UPDATER_TEST_HOOKS !== '1') return undefined;
  const bytes = Number(process.env.UPDATER_TEST_LEAK_BYTES_PER_HEARTBEAT ?? 0);
  if (!Number.isInteger(bytes) || bytes <= 0) return undefined;
  log.warn({ bytesPerHeartbeat: bytes }, 'TEST HOOK: a memory leak is planted in the HTTP front-end (UPDATER_TEST_LEAK_BYTES_PER_HEARTBEAT)');
  const retained: number[][] = [];
  // Numbers that are not small integers are stored as doubles: 8 bytes each in the V8 heap.
  const doubles = Math.max(1, Math.floor(bytes / 8));
  return (heartbeats) => {
    for (let i = 0; i < heartbeats; i++) retained.push(new Array<number>(doubles).fill(retained.length + 0.5));
  };
}
