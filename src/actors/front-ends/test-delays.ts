import type { Logger } from '../../shared/logger.js';

// A test-only hook, read only when UPDATER_TEST_HOOKS=1 is set as well (as test-leak.ts): it
// holds back a front-end's first decision snapshot or first targeting index by that many
// milliseconds, so that a test can send heartbeats in the gap every start has for a few
// milliseconds, before the front-end holds both, and see what they are answered.
//
//   UPDATER_TEST_HOOKS=1 UPDATER_TEST_FIRST_SNAPSHOT_DELAY_MS=1000 updater serve …
//   UPDATER_TEST_HOOKS=1 UPDATER_TEST_FIRST_TARGETING_INDEX_DELAY_MS=1000 updater serve …

const VARIABLES = {
  snapshot: 'UPDATER_TEST_FIRST_SNAPSHOT_DELAY_MS',
  'targeting index': 'UPDATER_TEST_FIRST_TARGETING_INDEX_DELAY_MS',
} as const;

/** How long to hold back the first `what`: 0 unless the hook is set. */
export function firstDelayMs(what: keyof typeof VARIABLES, log: Logger): number {
  if (process.env.UPDATER_TEST_HOOKS !== '1') return 0;
  const ms = Number(process.env[VARIABLES[what]] ?? 0);
  if (!Number.isInteger(ms) || ms <= 0) return 0;
  log.warn({ ms }, `TEST HOOK: this front-end's first ${what} is held back (${VARIABLES[what]})`);
  return ms;
}
