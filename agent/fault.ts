// TEST-ONLY fault injection. When the environment variable UPDATER_AGENT_FAULT_STEP names one
// of the steps below, the agent kills itself with SIGKILL on reaching that step, so the
// crash-safety tests can stop it at an exact point of the cycle. Unset (the only setting a
// device ever has), every call is a comparison with undefined and nothing else happens.

export const FAULT_ENV = 'UPDATER_AGENT_FAULT_STEP';

export const FAULT_STEPS = [
  'after-heartbeat',
  'after-signature-check',
  'mid-download',
  'after-download',
  'after-transfer-check',
  'mid-patch',
  'after-patch',
  'after-reconstruction-check',
  'after-marker',
  'after-swap',
  'after-restart',
  'boot-before-health-check',
  'boot-after-health-check',
  'boot-after-rollback-swap',
  'boot-after-sequence-saved',
] as const;
export type FaultStep = (typeof FAULT_STEPS)[number];

const armed = process.env[FAULT_ENV];

export function faultPoint(step: FaultStep): void {
  if (armed === step) process.kill(process.pid, 'SIGKILL');
}
