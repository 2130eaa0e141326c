import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import engine from 'updater-delta-engine';
import { checkPair, edgePairs, randomPair } from '../helpers/delta-fuzz.js';
import { needs } from '../helpers/system-tools.js';

// Every patch of the native engine is applied by the stock `bspatch` and compared. A bounded
// run here; a longer campaign by hand with DELTA_FUZZ_ROUNDS (and DELTA_FUZZ_SEED).

const run = promisify(execFile);
const ROUNDS = Number(process.env.DELTA_FUZZ_ROUNDS) > 0 ? Number(process.env.DELTA_FUZZ_ROUNDS) : 40;
const FIRST_SEED = Number(process.env.DELTA_FUZZ_SEED) > 0 ? Number(process.env.DELTA_FUZZ_SEED) : 1;

t.test('the suffix array equals a naive sort on random strings', async (t) => {
  const { stdout } = await run(engine.programPath, ['sa-check', String(FIRST_SEED), '2000']);
  t.same(JSON.parse(stdout), { checked: 2000 });
});

t.test('edge cases: stock bspatch rebuilds every target', needs('bspatch'), async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'updater-fuzz-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const pair of edgePairs()) {
    const outcome = await checkPair(dir, pair);
    t.ok(outcome.patchBytes >= 32, `${pair.name}: ${outcome.patchBytes}-byte patch rebuilds the target`);
  }
});

t.test(`${ROUNDS} random and mutated pairs: stock bspatch rebuilds every target`, needs('bspatch'), async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'updater-fuzz-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  let checked = 0;
  for (let seed = FIRST_SEED; seed < FIRST_SEED + ROUNDS; seed++) {
    await checkPair(dir, randomPair(seed));
    checked++;
  }
  t.equal(checked, ROUNDS, `${checked} pairs checked from seed ${FIRST_SEED}`);
});
