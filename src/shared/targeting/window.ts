import type { ErrorCode } from '../errors.js';
import type { Attributes } from './attributes.js';
import { refuse } from './names.js';
import { instantsOf, isTimeZone, wallClock, type WallClock } from './zone.js';

// A rollout's maintenance window (docs/rollouts.md, "Maintenance windows"): the days it opens
// on, a start and an end time of day, and the zone whose wall clock they are read on, an IANA
// zone or the device's own (`tz` attribute). The wall clock decides: when clocks jump forward
// over the start the window opens at the jump (and not that day when they jump over its end
// too), when they go back it may open twice.

export const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
export type DayName = typeof DAY_NAMES[number];
export const WINDOW_FIELDS = ['days', 'start', 'end', 'tz'] as const;
const HH_MM = /^([01]\d|2[0-3]):([0-5]\d)$/;

export interface MaintenanceWindow {
  /** As given, in week order (mon first), no repeats; all seven when left out. */
  readonly days: readonly DayName[];
  readonly start: string;
  readonly end: string;
  /** An IANA zone, or "device". */
  readonly tz: string;
}

export interface WindowState {
  readonly open: boolean;
  /** 0 when open; else whole seconds until it next opens (rounded up). */
  readonly opensInSeconds: number;
}

const WEEK_ORDER: readonly DayName[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

/** `field` is where the window sits (`rollout.window`); a rollout refuses with its own code. */
export function parseWindow(value: unknown, field = 'window', code: ErrorCode = 'INVALID_FIELD'): MaintenanceWindow {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) refuse(field, 'must be an object {days, start, end, tz}', code);
  const body = value as Record<string, unknown>;
  for (const key of Object.keys(body)) {
    if (!(WINDOW_FIELDS as readonly string[]).includes(key)) refuse(`${field}.${key}`, `is not a known field (known: ${WINDOW_FIELDS.join(', ')})`, code);
  }
  let days: DayName[] = [...WEEK_ORDER];
  if (body.days !== undefined) {
    if (!Array.isArray(body.days) || body.days.length === 0 || body.days.length > 7) refuse(`${field}.days`, 'must list 1 to 7 of mon, tue, wed, thu, fri, sat, sun', code);
    for (const day of body.days) {
      if (!WEEK_ORDER.includes(day as DayName)) refuse(`${field}.days`, `must name days as mon, tue, wed, thu, fri, sat, sun (got ${JSON.stringify(day)})`, code);
    }
    days = WEEK_ORDER.filter((day) => (body.days as unknown[]).includes(day));
  }
  for (const key of ['start', 'end'] as const) {
    if (typeof body[key] !== 'string' || !HH_MM.test(body[key])) refuse(`${field}.${key}`, 'must be a time of day HH:MM (00:00 to 23:59)', code);
  }
  if (body.start === body.end) refuse(`${field}.end`, 'must differ from start (an end before the start crosses midnight)', code);
  if (body.tz === undefined) refuse(`${field}.tz`, 'is required: an IANA zone such as Europe/Berlin, UTC, or "device"', code);
  if (body.tz !== 'device' && !isTimeZone(body.tz)) refuse(`${field}.tz`, `must be an IANA zone such as Europe/Berlin, UTC, or "device" (got ${JSON.stringify(String(body.tz).slice(0, 70))})`, code);
  return { days, start: body.start as string, end: body.end as string, tz: body.tz as string };
}

export function windowJson(window: MaintenanceWindow): Record<string, unknown> {
  return { days: [...window.days], start: window.start, end: window.end, tz: window.tz };
}

/** The zone a device's window is read in: the window's own, or the device's `tz` attribute, UTC when it has none or names no zone. */
export function windowZone(window: MaintenanceWindow, attributes: Attributes | undefined): string {
  if (window.tz !== 'device') return window.tz;
  const tz = attributes !== undefined && Object.hasOwn(attributes, 'tz') ? attributes.tz : undefined;
  return isTimeZone(tz) ? tz : 'UTC';
}

function minutes(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

/** Whether the window is open at `nowMs` on the wall clock of `zone`, and if not, when it opens. */
export function windowState(window: MaintenanceWindow, zone: string, nowMs: number): WindowState {
  const start = minutes(window.start);
  const end = minutes(window.end);
  const opensOn = new Set(window.days.map((day) => DAY_NAMES.indexOf(day)));
  const openAt = (clock: WallClock): boolean => {
    const yesterday = (clock.weekday + 6) % 7;
    return start < end
      ? opensOn.has(clock.weekday) && clock.minuteOfDay >= start && clock.minuteOfDay < end
      : (opensOn.has(clock.weekday) && clock.minuteOfDay >= start) || (opensOn.has(yesterday) && clock.minuteOfDay < end);
  };
  const now = wallClock(zone, nowMs);
  if (openAt(now)) return { open: true, opensInSeconds: 0 };
  // The next opening is the start of the window on one of the next fifteen local dates. A start
  // the clocks jump over opens at the jump, unless the end lies in the skipped hour too: the
  // window is then not open at the jump, and not on that date at all, so a window of one day a
  // week may next open two weeks on (clocks change at most a few times a year).
  for (let ahead = 0; ahead <= 14; ahead++) {
    if (!opensOn.has((now.weekday + ahead) % 7)) continue;
    const next = instantsOf(zone, now.year, now.month, now.day + ahead, start).find((at) => at > nowMs && openAt(wallClock(zone, at)));
    if (next !== undefined) return { open: false, opensInSeconds: Math.max(1, Math.ceil((next - nowMs) / 1000)) };
  }
  /* c8 ignore next: a day of the list recurs within fifteen dates */
  return { open: false, opensInSeconds: 7 * 86_400 };
}
