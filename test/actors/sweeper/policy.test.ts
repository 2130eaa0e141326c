import t from 'tap';
import { planSweep, type RetentionRules, type StoredBinary, type StoredFile } from '../../../src/actors/sweeper/policy.js';

const h = (c: string) => c.repeat(64);
const HOUR = 3_600_000;
const NOW = 1_000 * HOUR;
const rules: RetentionRules = { deltaMaxAgeMs: 720 * HOUR, deltasMaxTotalBytes: 0, collectOrphanBinaries: false, orphanBinaryMinAgeMs: 24 * HOUR };
const refs = { current: new Set([h('c')]), history: new Set([h('1'), h('2')]) };
const file = (name: string, ageHours: number, size = 100): StoredFile => ({ name, size, mtimeMs: NOW - ageHours * HOUR });

t.test('derived-file rules 1-5, in order', async (t) => {
  const files = [
    file('notes.txt', 9999),
    file(`${h('1')}_${h('c')}.delta.zst`, 1),
    file(`${h('1')}_${h('d')}.delta.zst`, 1),
    file(`${h('9')}_${h('c')}.delta.zst`, 1),
    file(`${h('2')}_${h('c')}.delta.zst`, 721),
    file(`${h('c')}.full.zst`, 1),
    file(`${h('d')}.full.zst`, 1),
    file(`${h('C')}.full.zst`, 1),
  ];
  const plan = planSweep(files, [], refs, rules, NOW);
  t.same(plan.unparseable, ['notes.txt', `${h('C')}.full.zst`], 'rule 1: names that do not parse (uppercase hex included) are left alone');
  const reasons = Object.fromEntries(plan.derived.map((d) => [d.file.name, d.reason]));
  t.same(reasons, {
    [`${h('1')}_${h('d')}.delta.zst`]: 'destination-not-current',
    [`${h('d')}.full.zst`]: 'destination-not-current',
    [`${h('9')}_${h('c')}.delta.zst`]: 'source-not-in-history',
    [`${h('2')}_${h('c')}.delta.zst`]: 'too-old',
  });
});

t.test('rule 5 evicts the oldest survivors until the directory fits', async (t) => {
  const files = [
    file(`${h('1')}_${h('c')}.delta.zst`, 10, 400),
    file(`${h('2')}_${h('c')}.delta.zst`, 5, 400),
    file(`${h('c')}.full.zst`, 1, 400),
  ];
  const plan = planSweep(files, [], refs, { ...rules, deltasMaxTotalBytes: 900 }, NOW);
  t.same(plan.derived.map((d) => [d.file.name, d.reason]), [[`${h('1')}_${h('c')}.delta.zst`, 'over-size-cap']]);
  t.same(planSweep(files, [], refs, rules, NOW).derived, [], 'a cap of 0 keeps everything');
});

t.test('orphan binaries only on opt-in, never referenced, never young', async (t) => {
  const bins: StoredBinary[] = [
    { hash: h('c'), size: 1, mtimeMs: 0 },
    { hash: h('1'), size: 1, mtimeMs: 0 },
    { hash: h('7'), size: 1, mtimeMs: 0 },
    { hash: h('8'), size: 1, mtimeMs: NOW - HOUR },
  ];
  t.same(planSweep([], bins, refs, rules, NOW).binaries, [], 'off by default');
  const plan = planSweep([], bins, refs, { ...rules, collectOrphanBinaries: true }, NOW);
  t.same(plan.binaries.map((b) => b.hash), [h('7')], 'current and history are kept; a young binary is in its grace period');
});
