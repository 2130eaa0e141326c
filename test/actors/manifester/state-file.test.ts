import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { decodeState, encodeState, readState, writeState, type PersistedState } from '../../../src/actors/manifester/state-file.js';
import type { Track } from '../../../src/actors/manifester/tracks.js';
import { applyAction, startRollout } from '../../../src/actors/manifester/rollout/rollout.js';
import { parseRolloutPlan } from '../../../src/shared/rollout-plan.js';

const H1 = '1'.repeat(64);
const H2 = '2'.repeat(64);
const track: Track = { key: 'app/linux/arm64', name: 'app', os: 'linux', arch: 'arm64', version: '1.2.0', hash: H1, size: 10, source: 'api', binary: '/srv/app', history: [H2], sequence: 1_800_000_000 };
const state: PersistedState = { default: 'app/linux/arm64', configDefault: '', tracks: [track] };

t.test('a written state reads back the same', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'state-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'nested', 'state.json');
  await writeState(path, state);
  t.same(await readState(path), state);
  t.equal(await readState(join(dir, 'missing.json')), undefined, 'a missing file is a fresh start');
  await writeFile(path, (await readFile(path, 'utf8')).slice(0, 50));
  await t.rejects(readState(path), { code: 'STATE_CORRUPT' }, 'a truncated file is corrupt');
});

t.test('every field is validated on load', async (t) => {
  const good = JSON.parse(encodeState(state));
  t.same(decodeState(good, 'x'), state);
  const variants: [string, (doc: any) => void][] = [
    ['wrong format', (d) => (d.format = 'other')],
    ['newer version', (d) => (d.version = 2)],
    ['tracks not a list', (d) => (d.tracks = {})],
    ['artifact not matching its parts', (d) => (d.tracks[0].artifact = 'app')],
    ['half platform', (d) => (d.tracks[0].arch = '')],
    ['name ..', (d) => (d.tracks[0].name = '..')],
    ['uppercase hash', (d) => (d.tracks[0].hash = 'A'.repeat(64))],
    ['negative size', (d) => (d.tracks[0].size = -1)],
    ['unknown source', (d) => (d.tracks[0].source = 'cli')],
    ['relative binary', (d) => (d.tracks[0].binary = 'app.bin')],
    ['history with a bad hash', (d) => (d.tracks[0].history = ['x'])],
    ['a repeated track', (d) => d.tracks.push({ ...d.tracks[0] })],
    ['a default that is no track', (d) => (d.default = 'other')],
  ];
  for (const [why, damage] of variants) {
    const doc = structuredClone(good);
    damage(doc);
    t.throws(() => decodeState(doc, '/var/state.json'), { code: 'STATE_CORRUPT', message: /\/var\/state\.json/ }, why);
  }
});

t.test('a track\'s rollout is recorded in full and checked on load', async (t) => {
  const plan = parseRolloutPlan({ steps: [10, 50, 100], step_interval: '30m', max_failure_rate: 0.25, min_reports: 4 });
  const paused = applyAction(startRollout(plan, { hash: H1, version: '1.2.0', size: 10 }, { stable: { hash: H2, version: '1.1.0', size: 9 }, held: ['3'.repeat(64)] }, 1_700_000_000_123), 'pause', false, 1_700_000_100_000);
  const withRollout: PersistedState = { ...state, tracks: [{ ...track, rollout: paused }] };
  const good = JSON.parse(encodeState(withRollout));
  t.same(decodeState(good, 'x'), withRollout, 'every field comes back, times to the millisecond');
  t.same(decodeState(JSON.parse(encodeState(state)), 'x'), state, 'a track without a rollout has none');
  const variants: [string, (r: any) => void][] = [
    ['a target that is not the track\'s', (r) => (r.target.hash = H2)],
    ['steps that do not reach 100', (r) => (r.steps = [10, 50])],
    ['a failure rate above 1', (r) => (r.max_failure_rate = 3)],
    ['an unknown state', (r) => (r.state = 'sleeping')],
    ['a paused rollout without a reason', (r) => (r.paused_reason = null)],
    ['a percent above 100', (r) => (r.percent = 120)],
    ['a paused rollout with a step due', (r) => (r.next_step_at_ms = 5)],
    ['negative counts', (r) => (r.reports.failure = -1)],
    ['a bad held hash', (r) => (r.held = ['nope'])],
    ['a stable target without a size', (r) => delete r.stable.size],
  ];
  for (const [why, damage] of variants) {
    const doc = structuredClone(good);
    damage(doc.tracks[0].rollout);
    t.throws(() => decodeState(doc, '/var/state.json'), { code: 'STATE_CORRUPT', message: /tracks\[0\]\.rollout/ }, why);
  }
});

t.test('a field left out is refused like a wrong one, and named', async (t) => {
  // A decoder whose check of a field is skipped when the field is absent would let a file
  // without its format or version marker (or a rollout without its counts) through.
  const good = JSON.parse(encodeState(state));
  const missing: [string, (doc: any) => void, RegExp][] = [
    ['no format', (d) => delete d.format, / format is undefined, expected "updater-state"/],
    ['no version', (d) => delete d.version, / version is undefined; this server reads version 1/],
    ['no tracks', (d) => delete d.tracks, / tracks must be a list/],
    ['a track without its version', (d) => delete d.tracks[0].version, / tracks\[0\]\.version must be a non-empty string/],
    ['a track without its history', (d) => delete d.tracks[0].history, / tracks\[0\]\.history must be a list of hashes/],
  ];
  for (const [why, damage, message] of missing) {
    const doc = structuredClone(good);
    damage(doc);
    t.throws(() => decodeState(doc, '/var/state.json'), { code: 'STATE_CORRUPT', message }, why);
  }
  const plan = parseRolloutPlan({ steps: [50, 100], step_interval: '1h' });
  const withRollout = JSON.parse(encodeState({ ...state, tracks: [{ ...track, rollout: startRollout(plan, { hash: H1, version: '1.2.0', size: 10 }, { stable: null, held: [] }, 1_700_000_000_000) }] }));
  for (const field of ['reports', 'held', 'rollback', 'paused_reason', 'started_at_ms']) {
    const doc = structuredClone(withRollout);
    delete doc.tracks[0].rollout[field];
    t.throws(() => decodeState(doc, '/var/state.json'), { code: 'STATE_CORRUPT', message: new RegExp(`tracks\\[0\\]\\.rollout ${field} `) }, `a rollout without ${field}`);
  }
});
