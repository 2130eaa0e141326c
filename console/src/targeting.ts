// The console's targeting forms as plain text in, API bodies out: steps written as
// "canary, 5, 25, 100", tags as "canary lab", a start time from a datetime-local field, and
// a filter as JSON. Pure, so test/console/logic.test.ts runs them without a browser; the
// server checks everything again and its error (naming the field) is what the form shows.

export type Step = number | { group: string };

/** "canary, 5, 25, 100" → [{group:"canary"},5,25,100]; a word is a group, a number a percent. */
export function parseSteps(text: string): Step[] {
  return text.replace(/(\d)\s*%/g, '$1').split(/[\s,→>]+/).filter((part) => part !== '').map((part) => (/^\d+(\.\d+)?$/.test(part) ? Number(part) : { group: part }));
}

/** The steps as the form writes them. */
export function stepsText(steps: readonly Step[]): string {
  return steps.map((s) => (typeof s === 'number' ? String(s) : s.group)).join(', ');
}

/** "canary, lab  night" → ["canary","lab","night"], sorted, without repeats. */
export function parseTags(text: string): string[] {
  return [...new Set(text.split(/[\s,]+/).filter((t) => t !== ''))].sort();
}

/** A datetime-local value ("2026-12-05T01:00") in the browser's zone as Unix seconds; undefined when empty. */
export function startAtSeconds(local: string): number | undefined {
  if (local.trim() === '') return undefined;
  const ms = new Date(local).getTime();
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

export interface WindowFields {
  days: string[];
  start: string;
  end: string;
  tz: string;
}

/** The window of a publish, or undefined when start and end are both empty. */
export function windowBody(fields: WindowFields): Record<string, unknown> | undefined {
  if (fields.start === '' && fields.end === '') return undefined;
  return { ...(fields.days.length > 0 && fields.days.length < 7 ? { days: fields.days } : {}), start: fields.start, end: fields.end, tz: fields.tz.trim() || 'device' };
}

/** `name/os/arch` or `name` as the publish body's fields. */
export function trackFields(artifact: string): { name: string; os?: string; arch?: string } {
  const [name = '', os, arch] = artifact.split('/');
  return os && arch ? { name, os, arch } : { name };
}

/** A rollout step as the panel shows it. */
export function stepLabel(step: Step): string {
  return typeof step === 'number' ? `${step} %` : `group ${step.group}`;
}
