import t from 'tap';
import { inCohort } from '../../../src/actors/manifester/rollout/cohort.js';
import { admit, WindowMemo, type AdmissionDevice, type AdmissionRollout } from '../../../src/shared/targeting/admission.js';
import { parseAttributes } from '../../../src/shared/targeting/attributes.js';
import { parseFilter } from '../../../src/shared/targeting/filter.js';
import { parseWindow, windowState } from '../../../src/shared/targeting/window.js';

// The targeting decision for one heartbeat: group steps, the percent cohort, the window in
// the device's own time, and the states; and the per-minute memo of window answers agreeing
// with Intl at every instant, daylight-saving days included.

const T = 'b'.repeat(64);
const OLD = 'a'.repeat(64);
const NOW = Date.parse('2026-11-27T18:00:00Z'); // 19:00 in Berlin, 03:00 (Saturday) in Tokyo
const canary = { name: 'canary', filter: parseFilter({ tags: ['canary'] }) };
const rollout = (over: Partial<AdmissionRollout> = {}): AdmissionRollout => ({ state: 'running', targetHash: T, rollback: false, groups: [canary], percent: 0, ...over });
const device = (id: string, over: Partial<AdmissionDevice> = {}): AdmissionDevice => ({
  deviceId: id, tags: [], attributes: parseAttributes({}), artifact: 'app', versionHash: OLD, lastSeen: NOW / 1000, ...over,
});
const never = () => false;
const always = () => true;

t.test('group steps reached and the percent cohort', async (t) => {
  t.same(admit(rollout(), device('d', { tags: ['canary'] }), never, NOW), { kind: 'offer', group: 'canary' }, 'a member of a group step reached');
  t.same(admit(rollout(), device('d'), never, NOW), { kind: 'cohort-out' }, 'neither member nor in the cohort');
  t.same(admit(rollout({ percent: 5 }), device('d'), always, NOW), { kind: 'offer' }, 'in the cohort of the percent');
  const ids = Array.from({ length: 2000 }, (_, i) => `dev-${i}`);
  const offered = ids.filter((id) => admit(rollout({ percent: 5, groups: [] }), device(id), inCohort, NOW).kind === 'offer');
  t.same(offered, ids.filter((id) => inCohort(id, T, 5)), 'the cohort is the rollout\'s own');
  t.same(admit(rollout({ groups: [] }), device('d', { tags: ['canary'] }), never, NOW), { kind: 'cohort-out' }, 'a group step not reached admits nobody');
});

t.test('the states', async (t) => {
  t.same(admit(rollout({ state: 'complete' }), device('d'), never, NOW), { kind: 'offer' });
  for (const state of ['scheduled', 'paused', 'aborted'] as const) {
    t.same(admit(rollout({ state }), device('d', { tags: ['canary'] }), always, NOW), { kind: 'cohort-out' }, `${state}: nobody new`);
    t.same(admit(rollout({ state }), device('d', { versionHash: T }), never, NOW), { kind: 'offer' }, `${state}: a device on T stays`);
  }
  t.same(admit(rollout({ state: 'aborted', rollback: true }), device('d', { versionHash: T }), never, NOW), { kind: 'cohort-out' }, 'rolled back');
});

t.test('a window in device time: each device its own clock; outside, wait until it opens', async (t) => {
  const night = parseWindow({ start: '02:00', end: '04:00', tz: 'device' });
  const r = rollout({ window: night, percent: 100 });
  const tokyo = device('t', { attributes: parseAttributes({ tz: 'Asia/Tokyo' }) });
  const berlin = device('b', { attributes: parseAttributes({ tz: 'Europe/Berlin' }) });
  t.same(admit(r, tokyo, always, NOW), { kind: 'offer' }, '03:00 in Tokyo');
  t.same(admit(r, berlin, always, NOW), { kind: 'wait', seconds: 7 * 3600 }, '19:00 in Berlin: seven hours to 02:00');
  t.same(admit(r, device('u', { attributes: parseAttributes({ tz: 'Nowhere/Land' }) }), always, NOW), { kind: 'wait', seconds: 8 * 3600 }, 'no zone: UTC');
  t.same(admit(r, device('x'), never, NOW + 8 * 3600_000), { kind: 'cohort-out' }, 'inside the window, the cohort decides (not in it: the stable target)');
  t.same(admit(rollout({ window: night, state: 'scheduled' }), berlin, always, NOW), { kind: 'wait', seconds: 7 * 3600 }, 'scheduled: outside the window, wait too');
  t.same(admit(r, device('on-t', { versionHash: T, attributes: parseAttributes({ tz: 'Europe/Berlin' }) }), never, NOW), { kind: 'offer' }, 'a device on T is not held by the window');
});

t.test('the memo answers as Intl does at every instant, across the daylight-saving changes', async (t) => {
  const memo = new WindowMemo();
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
      const at = Date.parse(`${day}T00:00:00Z`) + s * 1000 + (s % 1000);
      for (const w of windows) {
        for (const zone of zones) {
          const a = memo.state(w, zone, at);
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
