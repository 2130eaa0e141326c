// Time-zone arithmetic from Node's Intl (ICU's copy of the IANA database, kept up to date with
// Node), never from a table written here. Formatters are costly to build, so each zone's is kept;
// the caches are bounded because a device names its own zone (`tz` attribute). They are keyed by
// the name in lower case: Intl reads zone names without regard to case, and a formatter made for
// every spelling a device sends (about 300 µs and some kilobytes of native memory the process
// keeps, each) would let devices spend the server's CPU and memory at will.

const MAX_CACHED_ZONES = 1024;
const formatters = new Map<string, Intl.DateTimeFormat>();
const validity = new Map<string, boolean>();
/** Zone names as IANA writes them (Area/Location, Etc/GMT+5, UTC); rules out odd input before ICU sees it. */
const ZONE_TEXT = /^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/;

function remember<V>(cache: Map<string, V>, key: string, value: V): V {
  if (cache.size >= MAX_CACHED_ZONES) cache.clear();
  cache.set(key, value);
  return value;
}

function formatter(zone: string): Intl.DateTimeFormat {
  const key = zone.toLowerCase();
  return formatters.get(key) ?? remember(formatters, key, new Intl.DateTimeFormat('en-US', {
    timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
  }));
}

/** Whether Intl knows the zone (an IANA name such as Europe/Berlin, or UTC). */
export function isTimeZone(zone: unknown): zone is string {
  if (typeof zone !== 'string' || !ZONE_TEXT.test(zone)) return false;
  const key = zone.toLowerCase();
  const known = validity.get(key);
  if (known !== undefined) return known;
  let ok = true;
  try {
    formatter(zone);
  } catch {
    ok = false;
  }
  return remember(validity, key, ok);
}

/** The wall clock in `zone` at `ms`: calendar date, minutes since local midnight, seconds. */
export interface WallClock {
  readonly year: number;
  /** 1–12 */
  readonly month: number;
  readonly day: number;
  /** 0 Sunday … 6 Saturday */
  readonly weekday: number;
  readonly minuteOfDay: number;
  readonly second: number;
}

export function wallClock(zone: string, ms: number): WallClock {
  const parts = formatter(zone).formatToParts(ms);
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  const year = get('year');
  const month = get('month');
  const day = get('day');
  return { year, month, day, weekday: new Date(Date.UTC(year, month - 1, day)).getUTCDay(), minuteOfDay: get('hour') * 60 + get('minute'), second: get('second') };
}

/** Local time minus UTC at `ms`, in milliseconds. */
export function offsetAt(zone: string, ms: number): number {
  const whole = Math.floor(ms / 1000) * 1000;
  const w = wallClock(zone, whole);
  return Date.UTC(w.year, w.month - 1, w.day, 0, w.minuteOfDay, w.second) - whole;
}

/**
 * Every instant at which the wall clock of `zone` first shows `minuteOfDay` on the local date
 * given (month 1–12; day may run past the month's end, as Date.UTC allows). Usually one; two
 * when the clocks go back over it; when the clocks jump over it, the instant of the jump (the
 * first moment the wall clock is past it).
 */
export function instantsOf(zone: string, year: number, month: number, day: number, minuteOfDay: number): number[] {
  const naive = Date.UTC(year, month - 1, day, 0, minuteOfDay);
  const offsets = new Set([offsetAt(zone, naive - 86_400_000), offsetAt(zone, naive), offsetAt(zone, naive + 86_400_000)]);
  const found = [...offsets].map((offset) => naive - offset).filter((at) => offsetAt(zone, at) === naive - at);
  if (found.length > 0) return [...new Set(found)].sort((a, b) => a - b);
  // A gap: the local minute does not exist. Find the jump between the two readings by halving.
  const candidates = [...offsets].map((offset) => naive - offset).sort((a, b) => a - b);
  let lo = candidates[0]!;
  let hi = candidates[candidates.length - 1]!;
  const before = offsetAt(zone, lo);
  while (hi - lo > 60_000) {
    const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000;
    if (offsetAt(zone, mid) === before) lo = mid;
    else hi = mid;
  }
  return [hi];
}
