import t from 'tap';
import { isTimeZone, wallClock } from '../../../src/shared/targeting/zone.js';

// A device names its own zone (the `tz` attribute of a window in device time), and Intl reads
// zone names without regard to case: "america/argentina/buenos_aires" is the same zone in
// 2^26 spellings. Each Intl.DateTimeFormat costs about 300 µs and some kilobytes of native
// memory that the process keeps, so a spelling must not cost a formatter of its own.

const ZONE = 'America/Argentina/Buenos_Aires';
/** The i-th spelling of ZONE: letter k upper case when bit k of i is set. */
function spelling(i: number): string {
  let bit = 0;
  return ZONE.toLowerCase().replace(/[a-z]/g, (c) => ((i >> bit++) & 1 ? c.toUpperCase() : c));
}

t.test('every spelling of one zone shares one formatter', async (t) => {
  const Original = Intl.DateTimeFormat;
  let made = 0;
  Intl.DateTimeFormat = new Proxy(Original, {
    construct(target, args) {
      made++;
      return Reflect.construct(target, args) as object;
    },
  });
  t.teardown(() => {
    Intl.DateTimeFormat = Original;
  });
  const at = Date.UTC(2026, 0, 15, 12, 0);
  const spellings = Array.from({ length: 2000 }, (_, i) => spelling(i * 7919));
  t.equal(new Set(spellings).size, spellings.length, 'distinct spellings');
  for (const zone of spellings) {
    if (!isTimeZone(zone)) t.fail(`${zone} is a zone`);
    const clock = wallClock(zone, at);
    if (clock.minuteOfDay !== 9 * 60) t.fail(`${zone}: 09:00 in Buenos Aires, got minute ${clock.minuteOfDay}`);
  }
  t.ok(made <= 2, `formatters made for 2000 spellings of one zone: ${made}`);
});
