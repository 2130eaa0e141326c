import t from 'tap';
import { WindowClock } from '../../../src/shared/decision/window-clock.js';
import { parseWindow, windowState } from '../../../src/shared/targeting/window.js';

// The heartbeat path's memo of window answers (one Intl question per window, zone and UTC
// minute) agrees with Intl at every instant, daylight-saving days included.

t.test('the memo answers as Intl does at every instant, across the daylight-saving changes', async (t) => {
  let at = 0;
  const memo = new WindowClock(() => at);
  const windows = [
    parseWindow({ start: '02:30', end: '03:30', tz: 'America/New_York' }),
    parseWindow({ days: ['sun'], start: '02:15', end: '02:45', tz: 'Europe/Berlin' }),
    parseWindow({ days: ['fri', 'sat'], start: '22:00', end: '01:00', tz: 'UTC' }),
  ];
  const zones = ['America/New_York', 'Europe/Berlin', 'Asia/Kolkata', 'UTC'];
  const days = ['2026-03-07', '2026-03-08', '2026-03-28', '2026-03-29', '2026-10-24', '2026-10-25', '2026-10-31', '2026-11-01'];
  let checked = 0;
  let mismatches = 0;
  for (const day of days) {
    for (let s = 0; s < 86_400; s += 617) {
      at = Date.parse(`${day}T00:00:00Z`) + s * 1000 + (s % 1000);
      for (const w of windows) {
        for (const zone of zones) {
          const a = memo.state(w, zone);
          const b = windowState(w, zone, at);
          checked++;
          if (a.open !== b.open || a.opensInSeconds !== b.opensInSeconds) mismatches++;
        }
      }
    }
  }
  t.ok(checked > 10_000, `${checked} instants checked`);
  t.equal(mismatches, 0);
});
