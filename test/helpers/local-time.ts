// Wall-clock times in a zone, for tests that need a maintenance window open or closed now in
// a device's zone: a window a few hours either side of the current local minute cannot flip
// while a test runs, whatever the minute, hour or day boundary it starts near.

/** "HH:MM" of the current local minute in `zone`, moved by `minutes` (wrapping around midnight). */
export function localClock(zone: string, minutes = 0, nowMs = Date.now()): string {
  const parts = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(new Date(nowMs));
  const field = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  const total = (((field('hour') * 60 + field('minute') + minutes) % 1440) + 1440) % 1440;
  return `${String(Math.floor(total / 60)).padStart(2, '0')}:${String(total % 60).padStart(2, '0')}`;
}
