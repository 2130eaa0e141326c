import t from 'tap';
import { parseAttributes } from '../../../src/shared/targeting/attributes.js';
import { parseWindow, windowJson, windowState, windowZone } from '../../../src/shared/targeting/window.js';
import { isTimeZone } from '../../../src/shared/targeting/zone.js';

// Maintenance windows on the wall clock of a zone, with Intl's zone rules: daylight-saving
// jumps in both directions on both sides of the Atlantic, midnight crossings and day lists.
// Every instant is written in UTC so the expectation is independent of the code under test.

const at = (iso: string) => Date.parse(iso);
const win = (value: Record<string, unknown>) => parseWindow(value);
const state = (w: ReturnType<typeof win>, zone: string, iso: string) => windowState(w, zone, at(iso));

t.test('a plain day in Berlin (CET, UTC+1)', async (t) => {
  const w = win({ start: '02:00', end: '04:00', tz: 'Europe/Berlin' });
  t.same(state(w, 'Europe/Berlin', '2026-03-28T00:00:00Z'), { open: false, opensInSeconds: 3600 });
  t.same(state(w, 'Europe/Berlin', '2026-03-28T01:00:00Z'), { open: true, opensInSeconds: 0 }, 'opens at 02:00 local');
  t.same(state(w, 'Europe/Berlin', '2026-03-28T02:59:59Z'), { open: true, opensInSeconds: 0 });
  t.same(state(w, 'Europe/Berlin', '2026-03-28T00:59:59.500Z'), { open: false, opensInSeconds: 1 }, 'half a second rounds up');
});

t.test('Berlin springs forward over the window\'s start (2026-03-29, 02:00 CET → 03:00 CEST)', async (t) => {
  const w = win({ start: '02:00', end: '04:00', tz: 'Europe/Berlin' });
  t.same(state(w, 'Europe/Berlin', '2026-03-29T00:30:00Z'), { open: false, opensInSeconds: 1800 }, 'it opens at the jump, 01:00Z');
  t.same(state(w, 'Europe/Berlin', '2026-03-29T01:00:00Z'), { open: true, opensInSeconds: 0 }, '03:00 CEST is inside');
  t.same(state(w, 'Europe/Berlin', '2026-03-29T02:00:00Z'), { open: false, opensInSeconds: 22 * 3600 }, '04:00 CEST closes it; the next 02:00 CEST is 00:00Z');
  const half = win({ start: '02:30', end: '02:45', tz: 'Europe/Berlin' });
  // A window wholly inside the gap: the wall clock never shows 02:30 to 02:45 on that day, and
  // at the jump (03:00) it is past the end, so the window does not open that day. The answer
  // must not send a device back at the jump only to find the window closed.
  t.same(state(half, 'Europe/Berlin', '2026-03-29T00:00:00Z'), { open: false, opensInSeconds: 24 * 3600 + 30 * 60 }, 'it next opens at 02:30 CEST the next day (00:30Z on 03-30), not at the jump');
  t.same(state(half, 'Europe/Berlin', '2026-03-29T01:00:00Z'), { open: false, opensInSeconds: 24 * 3600 - 30 * 60 }, 'at the jump it is closed and opens at 02:30 CEST the next day (00:30Z)');
  const sundays = win({ days: ['sun'], start: '02:10', end: '02:50', tz: 'Europe/Berlin' });
  t.same(state(sundays, 'Europe/Berlin', '2026-03-28T12:00:00Z'), { open: false, opensInSeconds: 8 * 86_400 + 10 * 60 - 12 * 3600 }, 'a Sunday-only window skipped by the jump opens the Sunday after (04-05, 00:10Z)');
  t.same(state(sundays, 'America/New_York', '2026-03-07T00:10:00Z'), { open: false, opensInSeconds: 8 * 86_400 + 6 * 3600 }, 'read in New York on a Friday evening, where 03-08 skips it: 02:10 EDT on 03-15 (06:10Z), nine local dates on');
  const ending = win({ start: '01:30', end: '02:30', tz: 'Europe/Berlin' });
  t.same(state(ending, 'Europe/Berlin', '2026-03-29T00:59:59Z'), { open: true, opensInSeconds: 0 }, 'a window whose end the clocks jump over is open until the jump');
  t.same(state(ending, 'Europe/Berlin', '2026-03-29T01:00:00Z'), { open: false, opensInSeconds: 22 * 3600 + 30 * 60 }, 'and closed from it: the next 01:30 CEST is 23:30Z');
});

t.test('Berlin falls back over the window (2026-10-25, 03:00 CEST → 02:00 CET): it opens twice', async (t) => {
  const w = win({ start: '02:15', end: '02:45', tz: 'Europe/Berlin' });
  t.same(state(w, 'Europe/Berlin', '2026-10-25T00:00:00Z'), { open: false, opensInSeconds: 900 }, 'first 02:15, CEST: 00:15Z');
  t.same(state(w, 'Europe/Berlin', '2026-10-25T00:20:00Z'), { open: true, opensInSeconds: 0 });
  t.same(state(w, 'Europe/Berlin', '2026-10-25T00:50:00Z'), { open: false, opensInSeconds: 1500 }, 'second 02:15, CET: 01:15Z');
  t.same(state(w, 'Europe/Berlin', '2026-10-25T01:20:00Z'), { open: true, opensInSeconds: 0 });
  t.same(state(w, 'Europe/Berlin', '2026-10-25T01:50:00Z'), { open: false, opensInSeconds: 23 * 3600 + 25 * 60 }, 'then 02:15 CET the next day, 01:15Z');
});

t.test('New York springs forward (2026-03-08, 02:00 EST → 03:00 EDT)', async (t) => {
  const w = win({ start: '02:30', end: '03:30', tz: 'America/New_York' });
  t.same(state(w, 'America/New_York', '2026-03-07T05:00:00Z'), { open: false, opensInSeconds: 9000 }, 'the day before: 02:30 EST is 07:30Z');
  t.same(state(w, 'America/New_York', '2026-03-07T09:00:00Z'), { open: false, opensInSeconds: 22 * 3600 }, '04:00 EST: the next opening is the jump, 07:00Z, 22 hours on (a 23-hour day)');
  t.same(state(w, 'America/New_York', '2026-03-08T06:59:00Z'), { open: false, opensInSeconds: 60 });
  t.same(state(w, 'America/New_York', '2026-03-08T07:00:00Z'), { open: true, opensInSeconds: 0 }, '03:00 EDT');
  t.same(state(w, 'America/New_York', '2026-03-08T07:30:00Z'), { open: false, opensInSeconds: 23 * 3600 }, '03:30 EDT closes it; next 02:30 EDT is 06:30Z');
});

t.test('New York falls back (2026-11-01, 02:00 EDT → 01:00 EST): a 01:00–03:00 window lasts three hours', async (t) => {
  const w = win({ start: '01:00', end: '03:00', tz: 'America/New_York' });
  t.same(state(w, 'America/New_York', '2026-11-01T04:00:00Z'), { open: false, opensInSeconds: 3600 }, '01:00 EDT is 05:00Z');
  t.same(state(w, 'America/New_York', '2026-11-01T06:30:00Z'), { open: true, opensInSeconds: 0 }, '01:30 EST, the second time round');
  t.same(state(w, 'America/New_York', '2026-11-01T07:59:59Z'), { open: true, opensInSeconds: 0 });
  t.same(state(w, 'America/New_York', '2026-11-01T08:00:00Z'), { open: false, opensInSeconds: 22 * 3600 }, '03:00 EST; next 01:00 EST is 06:00Z');
});

t.test('an end before the start crosses midnight; days are the days it opens on', async (t) => {
  // 2026-11-27 is a Friday.
  const w = win({ days: ['fri'], start: '22:00', end: '02:00', tz: 'UTC' });
  t.same(state(w, 'UTC', '2026-11-27T21:00:00Z'), { open: false, opensInSeconds: 3600 });
  t.same(state(w, 'UTC', '2026-11-27T23:00:00Z'), { open: true, opensInSeconds: 0 });
  t.same(state(w, 'UTC', '2026-11-28T01:59:00Z'), { open: true, opensInSeconds: 0 }, 'Saturday morning belongs to Friday\'s window');
  t.same(state(w, 'UTC', '2026-11-28T02:00:00Z'), { open: false, opensInSeconds: (6 * 24 + 20) * 3600 }, 'next Friday 22:00');
  t.same(state(w, 'UTC', '2026-11-27T01:00:00Z'), { open: false, opensInSeconds: 21 * 3600 }, 'Friday 01:00 belongs to Thursday, which is not listed');
  const weekend = win({ days: ['sun', 'sat', 'sat'], start: '09:00', end: '17:00', tz: 'UTC' });
  t.same(weekend.days, ['sat', 'sun'], 'week order, no repeats');
  t.same(state(weekend, 'UTC', '2026-11-27T10:00:00Z'), { open: false, opensInSeconds: 23 * 3600 }, 'Friday: Saturday 09:00');
  t.same(state(weekend, 'UTC', '2026-11-29T16:59:00Z'), { open: true, opensInSeconds: 0 }, 'Sunday');
  t.same(state(weekend, 'UTC', '2026-11-29T17:00:00Z'), { open: false, opensInSeconds: (5 * 24 + 16) * 3600 }, 'Sunday evening: next Saturday');
});

t.test('a window in device time reads the device\'s tz attribute, UTC when it names no zone', async (t) => {
  const w = win({ start: '02:00', end: '04:00', tz: 'device' });
  t.equal(windowZone(w, parseAttributes({ tz: 'Asia/Tokyo' })), 'Asia/Tokyo');
  t.equal(windowZone(w, parseAttributes({ tz: 'Mars/Olympus' })), 'UTC');
  t.equal(windowZone(w, parseAttributes({})), 'UTC');
  t.equal(windowZone(w, undefined), 'UTC');
  t.equal(windowZone(win({ start: '02:00', end: '04:00', tz: 'Europe/Berlin' }), parseAttributes({ tz: 'Asia/Tokyo' })), 'Europe/Berlin', 'a window in a named zone ignores the device');
  t.ok(state(w, windowZone(w, parseAttributes({ tz: 'Asia/Tokyo' })), '2026-11-27T18:00:00Z').open, '03:00 in Tokyo');
  t.notOk(state(w, 'UTC', '2026-11-27T18:00:00Z').open);
});

t.test('parsing: bad windows are refused naming the field', async (t) => {
  t.same(windowJson(win({ start: '22:00', end: '02:00', tz: 'device' })), { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '22:00', end: '02:00', tz: 'device' });
  const cases: [unknown, string][] = [
    [null, 'window'], ['22-02', 'window'],
    [{ start: '02:00', end: '02:00', tz: 'UTC' }, 'window.end'],
    [{ start: '2:00', end: '04:00', tz: 'UTC' }, 'window.start'],
    [{ start: '02:00', end: '24:00', tz: 'UTC' }, 'window.end'],
    [{ start: '02:00', tz: 'UTC' }, 'window.end'],
    [{ start: '02:00', end: '04:00' }, 'window.tz'],
    [{ start: '02:00', end: '04:00', tz: 'Mars/Olympus' }, 'window.tz'],
    [{ start: '02:00', end: '04:00', tz: '../../etc/passwd' }, 'window.tz'],
    [{ start: '02:00', end: '04:00', tz: 5 }, 'window.tz'],
    [{ days: [], start: '02:00', end: '04:00', tz: 'UTC' }, 'window.days'],
    [{ days: ['monday'], start: '02:00', end: '04:00', tz: 'UTC' }, 'window.days'],
    [{ start: '02:00', end: '04:00', tz: 'UTC', zone: 'UTC' }, 'window.zone'],
  ];
  for (const [value, field] of cases) t.throws(() => parseWindow(value), { code: 'INVALID_FIELD', details: { field } }, JSON.stringify(value));
  t.throws(() => parseWindow({ start: '02:00', end: '02:00', tz: 'UTC' }, 'rollout.window', 'INVALID_ROLLOUT'), { code: 'INVALID_ROLLOUT', details: { field: 'rollout.window.end' } });
});

t.test('zones: whatever Intl knows, nothing else', async (t) => {
  for (const zone of ['UTC', 'Europe/Berlin', 'America/Argentina/Buenos_Aires', 'Etc/GMT+5']) t.ok(isTimeZone(zone), zone);
  for (const zone of ['Mars/Olympus', '', 'Europe/Berlin ', 'x'.repeat(65), null]) t.notOk(isTimeZone(zone), String(zone));
});
