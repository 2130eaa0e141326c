import { execFileSync } from 'node:child_process';
import t from 'tap';
import { admitsBucket, cohortBucket, inCohort } from '../../../src/shared/decision/cohort.js';
import { needs } from '../../helpers/system-tools.js';

const T = '3f'.repeat(32);
const ids = Array.from({ length: 400 }, (_, i) => (i % 7 === 0 ? `gerät-ü-${i}` : `dev-${i.toString().padStart(4, '0')}`));
const PERCENTS = [0, 0.01, 0.07, 0.57, 1.15, 5, 10, 12.34, 50, 99.99, 100];

// The formula of docs/rollouts.md ("Who gets the new build") computed by another implementation: Python's hashlib and
// struct, fed the same ids as UTF-8. Any difference in byte order, encoding or the
// separator would show here.
const PYTHON = `
import hashlib, json, struct, sys
doc = json.load(sys.stdin)
out = []
for d in doc["ids"]:
    bucket = struct.unpack(">I", hashlib.sha256((d + ":" + doc["target"]).encode("utf-8")).digest()[0:4])[0] % 10000
    # A percent has two decimals at most: p * 100 is read as the whole number of hundredths it
    # stands for, since the product of binary floats may fall either side of it (0.07 * 100).
    out.append({"bucket": bucket, "in": [bucket < round(p * 100) for p in doc["percents"]]})
print(json.dumps(out))
`;

t.test('the cohort matches an independent computation (Python hashlib)', needs('python3'), async (t) => {
  const expected = JSON.parse(execFileSync('python3', ['-c', PYTHON], { input: JSON.stringify({ ids, target: T, percents: PERCENTS }) }).toString()) as { bucket: number; in: boolean[] }[];
  t.equal(expected.length, ids.length);
  let mismatches = 0;
  ids.forEach((id, i) => {
    if (cohortBucket(id, T) !== expected[i]!.bucket) mismatches++;
    PERCENTS.forEach((p, j) => {
      if (inCohort(id, T, p) !== expected[i]!.in[j]) mismatches++;
    });
  });
  t.equal(mismatches, 0, 'every bucket and every membership agrees');
});

t.test('the cohort agrees with openssl for one device', needs('openssl'), async (t) => {
  const digest = execFileSync('openssl', ['dgst', '-sha256', '-binary'], { input: Buffer.from(`dev-0001:${T}`, 'utf8') });
  t.equal(cohortBucket('dev-0001', T), digest.readUInt32BE(0) % 10000);
});

t.test('a device once in stays in as the percent grows', async (t) => {
  for (const id of ids) {
    let was = false;
    for (let p = 0; p <= 100; p += 2.5) {
      const now = inCohort(id, T, p);
      if (was && !now) t.fail(`${id} left the cohort at ${p} %`);
      was = now;
    }
  }
  t.ok(ids.every((id) => inCohort(id, T, 100)), 'everyone is in at 100 %');
  t.ok(ids.every((id) => !inCohort(id, T, 0)), 'no one is in at 0 %');
});

t.test('the cohort spreads devices evenly and depends on the target', async (t) => {
  const many = Array.from({ length: 20_000 }, (_, i) => `unit-${i}`);
  const share = many.filter((id) => inCohort(id, T, 10)).length / many.length;
  t.ok(share > 0.09 && share < 0.11, `about 10 % at 10 % (got ${(share * 100).toFixed(2)} %)`);
  const other = 'a1'.repeat(32);
  const same = many.slice(0, 2000).filter((id) => inCohort(id, T, 10) === inCohort(id, other, 10)).length;
  t.ok(same < 2000, 'another target draws another cohort');
});

t.test('a percent of two decimals admits exactly that many hundredths of the buckets', async (t) => {
  // 0.07 * 100 is 7.000000000000001 in binary floats: compared as it is, bucket 7 would be in
  // the cohort of 0.07 %, eight buckets instead of seven. Every percent the API takes is checked.
  const wrong: string[] = [];
  for (let hundredths = 1; hundredths < 10_000; hundredths++) {
    const percent = Number((hundredths / 100).toFixed(2));
    if (!admitsBucket(hundredths - 1, percent) || admitsBucket(hundredths, percent)) wrong.push(String(percent));
  }
  t.same(wrong, [], 'each percent p admits the buckets below p * 100 and not the one at it');
  const seventh = Array.from({ length: 100_000 }, (_, i) => `unit-${i}`).find((id) => cohortBucket(id, T) === 7)!;
  t.notOk(inCohort(seventh, T, 0.07), `a device of bucket 7 (${seventh}) is not in the cohort of 0.07 %`);
  t.ok(inCohort(seventh, T, 0.08), 'and is in that of 0.08 %');
});
