import { Registry } from 'prom-client';
import t, { type Test } from 'tap';
import { DecisionReplica, Hop } from '../../../src/actors/front-ends/decision-replica.js';
import { WindowClock } from '../../../src/shared/decision/window-clock.js';
import { encodeCoapManifest } from '../../../src/shared/wire/cbor.js';
import { Manifester } from '../../../src/actors/manifester/manifester.js';
import { ReleaseStatements } from '../../../src/actors/manifester/release-statements.js';
import { applyAction, startRollout, successorBasis } from '../../../src/actors/manifester/rollout/rollout.js';
import { SignedManifests } from '../../../src/actors/manifester/signer.js';
import { buildSnapshot } from '../../../src/actors/manifester/snapshot/build.js';
import { StoreView } from '../../../src/actors/manifester/store-view.js';
import { TrackTable, type PublishedTarget } from '../../../src/actors/manifester/tracks.js';
import type { AnswerEncoding, HeartbeatRequest } from '../../../src/messages/manifester.js';
import type { TransferInfo } from '../../../src/messages/store.js';
import type { Config } from '../../../src/shared/config/types.js';
import { inCohort } from '../../../src/shared/decision/cohort.js';
import { createDecisionCounters } from '../../../src/shared/decision/counters.js';
import { formatsOffered } from '../../../src/shared/delta-formats.js';
import type { Logger } from '../../../src/shared/logger.js';
import { parseRolloutPlan } from '../../../src/shared/rollout-plan.js';

// The front-ends answer from the manifester's snapshot with the manifester's own rules: for
// every heartbeat the snapshot answers, the bytes are the manifester's, in both encodings;
// and it leaves to the manifester exactly what needs it (an unknown track, an offer of a
// rollout's target, a delta not made yet, a binary over the size cap), nothing more. Checked
// over tracks with and without a rollout, the default track, both patch formats, a paused
// rollout, a new publish and renewed release statements.

const seed = new Uint8Array(32).fill(7);
const [A, B, C, U] = ['a', 'b', 'c', 'e'].map((c) => c.repeat(64)) as [string, string, string, string];
const SIZE = 1000;
const CAP = 5000;
const config = {
  store: { deltaEngine: 'native', deltaMaxSourceBytes: CAP },
  allowFullDownload: true,
  manifest: { chunkSize: 256, retryAfterSeconds: 5 },
} as unknown as Config;
const log = { warn: () => undefined, info: () => undefined, debug: () => undefined, error: () => undefined } as unknown as Logger;

function world() {
  let nowMs = 1_790_000_000_000;
  const statements = new ReleaseStatements(seed, 3600, { signed: () => undefined }, () => nowMs);
  const clock = new WindowClock(() => nowMs);
  const tracks = new TrackTable((all) => statements.sync(all));
  const view = new StoreView(() => undefined);
  const signed = new SignedManifests(seed, 1000);
  const asked: string[] = [];
  const manifester = new Manifester(config, log, tracks, view, signed, {
    ensureDelta: (from, to, format) => asked.push(`delta ${from}>${to} ${format}`),
    ensureFull: (hash) => asked.push(`full ${hash}`),
  }, createDecisionCounters(new Registry()), statements, { offered: () => undefined }, clock);
  const target = (key: string, hash: string, version: string, size = SIZE): PublishedTarget => ({ key, name: key, os: '', arch: '', version, hash, size, source: 'api', binary: `/srv/${key}` });
  tracks.publish(target('app', A, '1'), 3);
  tracks.publish(target('app', B, '2'), 3);
  tracks.publish(target('big', C, '3', CAP + 1), 3);
  const before = tracks.publish(target('roll', A, '1'), 3).track;
  const plan = parseRolloutPlan({ steps: [50, 100], step_interval: '1h' });
  tracks.publish({ ...target('roll', C, '3'), rollout: startRollout(plan, { hash: C, version: '3', size: SIZE }, successorBasis(before), nowMs) }, 3);
  // A window that is closed now (two hours ahead, UTC): every device not on the target waits for it.
  const hour = (new Date(nowMs).getUTCHours() + 2) % 24;
  const hh = (h: number) => `${String(h).padStart(2, '0')}:00`;
  const closed = parseRolloutPlan({ steps: [50, 100], step_interval: '1h', window: { start: hh(hour), end: hh((hour + 1) % 24), tz: 'UTC' } });
  const beforeWin = tracks.publish(target('win', A, '1'), 3).track;
  tracks.publish({ ...target('win', B, '2'), rollout: startRollout(closed, { hash: B, version: '2', size: SIZE }, successorBasis(beforeWin), nowMs) }, 3);
  tracks.setDefault('app');
  const delta = (from: string, to: string, format?: 'bsdiff-lzma'): TransferInfo => ({ kind: 'delta', from, to, size: 100, hash: `${from[0]}${to[0]}${format ?? ''}`.padEnd(64, '0'), ...(format ? { format } : {}) });
  view.applySnapshot({
    seq: 1,
    binaries: [A, B, C].map((hash) => ({ hash, size: SIZE })) as never,
    transfers: [delta(A, B), delta(A, B, 'bsdiff-lzma'), delta(A, C), { kind: 'full', to: B, size: 900, hash: 'f'.repeat(64) }, { kind: 'full', to: C, size: 900, hash: 'd'.repeat(64) }],
  });
  return { manifester, tracks, view, statements, asked, clock, advance: (ms: number) => (nowMs += ms) };
}

type World = ReturnType<typeof world>;

const encoders = { json: JSON.stringify, cbor: encodeCoapManifest } as const;

const DEVICES = Array.from({ length: 40 }, (_, i) => `dev-${i}`);
const requests: HeartbeatRequest[] = DEVICES.flatMap((deviceId) => ['app', '', 'roll', 'big', 'nope', 'win'].flatMap((artifact) => [A, B, C, U].flatMap((versionHash) =>
  [undefined, ['bsdiff-lzma', 'bsdiff40']].map((deltaFormats) => ({ deviceId, artifact, versionHash, ...(deltaFormats ? { deltaFormats } : {}) }) as HeartbeatRequest))));

function manifesterAnswer<E extends AnswerEncoding>(w: World, request: HeartbeatRequest, encoding: E) {
  try {
    return w.manifester.encoded(w.manifester.heartbeat(request), encoding);
  } catch {
    return undefined; // an unknown track: the manifester refuses it
  }
}

/** Why the manifester must answer this one itself, or null when the snapshot should. */
function needsManifester(w: World, request: HeartbeatRequest): string | null {
  if (request.artifact === 'nope') return 'unknown track';
  if (request.artifact === 'win') return null; // outside its window: answered here with retry_after (or up to date)
  const track = w.tracks.resolve(request.artifact)!;
  const rollout = track.rollout;
  if (rollout && rollout.state === 'running' && request.versionHash !== C && inCohort(request.deviceId, C, rollout.percent)) return 'offer';
  const json = manifesterAnswer(w, request, 'json')!;
  if (JSON.parse(json).retry_after !== undefined) return 'file not made yet';
  // C is over the cap, and only A→C in bsdiff40 exists (an existing delta is served whatever its size).
  if (request.artifact === 'big' && (request.versionHash === B || (request.versionHash === A && request.deltaFormats))) return 'over the size cap';
  return null;
}

function compareAll(t: Test, w: World, what: string): void {
  for (const encoding of ['json', 'cbor'] as const) {
    for (const r of requests) manifesterAnswer(w, r, encoding); // the manifester signs what it answers, as on a heartbeat
    const replica = new DecisionReplica<string | Uint8Array>({ offered: formatsOffered('native'), capBytes: CAP, allowFullDownload: true, encode: encoders[encoding] as (m: unknown) => string | Uint8Array }, createDecisionCounters(new Registry()), w.clock);
    replica.apply(buildSnapshot('v', encoding, w));
    let answered = 0;
    const wrong: string[] = [];
    for (const r of requests) {
      const own = replica.answer(r);
      const reason = needsManifester(w, r);
      if (own instanceof Hop) {
        if (reason === null) wrong.push(`left to the manifester without cause: ${JSON.stringify(r)}`);
        continue;
      }
      answered++;
      if (reason !== null) wrong.push(`answered although it needs the manifester (${reason}): ${JSON.stringify(r)}`);
      const theirs = manifesterAnswer(w, r, encoding);
      const same = encoding === 'json' ? own === theirs : Buffer.from(own as unknown as Uint8Array).equals(Buffer.from(theirs as Uint8Array));
      if (!same) wrong.push(`answers differ for ${JSON.stringify(r)}`);
    }
    t.same(wrong.slice(0, 5), [], `${what}, ${encoding}: the snapshot answers as the manifester does, and only where it may`);
    t.ok(answered > requests.length / 3, `${what}, ${encoding}: ${answered} of ${requests.length} answered from the snapshot`);
  }
}

t.test('the snapshot answers byte for byte as the manifester, and leaves it exactly what needs it', async (t) => {
  const w = world();
  compareAll(t, w, 'as published');
  t.ok(w.asked.length > 0, 'the manifester asked for the files it lacked');

  const roll = w.tracks.get('roll')!;
  w.tracks.restore({ ...roll, rollout: applyAction(roll.rollout!, 'pause', false, 0) });
  compareAll(t, w, 'rollout paused');

  w.tracks.publish({ key: 'app', name: 'app', os: '', arch: '', version: '3', hash: C, size: SIZE, source: 'api', binary: '/srv/app' }, 3);
  compareAll(t, w, 'a new target on the default track');

  w.advance(3600_000);
  t.ok(w.statements.renew() > 0, 'statements renewed');
  compareAll(t, w, 'renewed release statements');
});

t.test('an empty snapshot answers nothing: every heartbeat goes to the manifester', async (t) => {
  const replica = new DecisionReplica({ offered: formatsOffered('native'), capBytes: 0, allowFullDownload: false, encode: JSON.stringify }, createDecisionCounters(new Registry()), new WindowClock());
  t.equal(replica.answer(requests[0]!), Hop.plain, 'before the first snapshot');
  t.equal(replica.version, '');
});

t.test('two tracks with the same target, both outside their window: each is answered as itself', async (t) => {
  // The same build on two tracks (say app and app-lab), each rolling out in the same night
  // window: a device of either waits with the retry_after of its window, and its answer names
  // its own track and carries that track's release statement, as the manifester's does.
  const nowMs = 1_790_000_000_000;
  const statements = new ReleaseStatements(seed, 3600, { signed: () => undefined }, () => nowMs);
  const clock = new WindowClock(() => nowMs);
  const tracks = new TrackTable((all) => statements.sync(all));
  const view = new StoreView(() => undefined);
  const manifester = new Manifester(config, log, tracks, view, new SignedManifests(seed, 1000), { ensureDelta: () => undefined, ensureFull: () => undefined },
    createDecisionCounters(new Registry()), statements, { offered: () => undefined }, clock);
  const hour = (new Date(nowMs).getUTCHours() + 2) % 24;
  const hh = (h: number) => `${String(h).padStart(2, '0')}:00`;
  const plan = parseRolloutPlan({ steps: [50, 100], step_interval: '1h', window: { start: hh(hour), end: hh((hour + 1) % 24), tz: 'UTC' } });
  for (const key of ['app', 'app-lab']) {
    const target = (hash: string, version: string): PublishedTarget => ({ key, name: key, os: '', arch: '', version, hash, size: SIZE, source: 'api', binary: `/srv/${key}` });
    const before = tracks.publish(target(A, '1'), 3).track;
    tracks.publish({ ...target(B, '2'), rollout: startRollout(plan, { hash: B, version: '2', size: SIZE }, successorBasis(before), nowMs) }, 3);
  }
  view.applySnapshot({ seq: 1, binaries: [A, B].map((hash) => ({ hash, size: SIZE })) as never, transfers: [] });
  for (const encoding of ['json', 'cbor'] as const) {
    const replica = new DecisionReplica<string | Uint8Array>({ offered: formatsOffered('native'), capBytes: CAP, allowFullDownload: true, encode: encoders[encoding] as (m: unknown) => string | Uint8Array }, createDecisionCounters(new Registry()), clock);
    replica.apply(buildSnapshot('v', encoding, { manifester, tracks, view }));
    for (const artifact of ['app', 'app-lab']) {
      const request: HeartbeatRequest = { deviceId: 'dev-1', versionHash: A, artifact };
      const own = replica.answer(request);
      t.notOk(own instanceof Hop, `${artifact}, ${encoding}: answered from the snapshot`);
      const theirs = manifester.encoded(manifester.heartbeat(request), encoding);
      const same = encoding === 'json' ? own === theirs : Buffer.from(own as Uint8Array).equals(Buffer.from(theirs as Uint8Array));
      t.ok(same, `${artifact}, ${encoding}: the manifester's own answer, byte for byte`);
      if (encoding === 'json') t.equal(JSON.parse(own as string).artifact, artifact, 'the answer names the track asked for');
    }
  }
});

t.test('a route taken from a snapshot older than an abort or a pause does not offer the target', async (t) => {
  // A front-end routes from the snapshot it holds; the operator's abort reaches the manifester
  // first, and the heartbeat that the front-end routed to the target just before its new
  // snapshot arrived comes to the manifester with that route. The manifester, which owns the
  // rollout, must not offer the target the operator just stopped.
  for (const [action, rollback] of [['abort', false], ['abort', true], ['pause', false]] as const) {
    const w = world();
    const replica = new DecisionReplica<string | Uint8Array>({ offered: formatsOffered('native'), capBytes: CAP, allowFullDownload: true, encode: JSON.stringify }, createDecisionCounters(new Registry()), w.clock);
    replica.apply(buildSnapshot('v', 'json', w));
    const request = requests.find((r) => r.artifact === 'roll' && r.versionHash === A && inCohort(r.deviceId, C, 50))!;
    const hop = replica.answer(request);
    t.equal(hop, Hop.target, 'the front-end routes a device of the cohort to the target, and leaves the offer to the manifester');
    const roll = w.tracks.get('roll')!;
    w.tracks.restore({ ...roll, rollout: applyAction(roll.rollout!, action, rollback, 0) });
    const answer = JSON.parse(w.manifester.encoded(w.manifester.heartbeat({ ...request, route: (hop as Hop).route }), 'json') as string) as Record<string, unknown>;
    const own = JSON.parse(w.manifester.encoded(w.manifester.heartbeat(request), 'json') as string) as Record<string, unknown>;
    t.not(answer.target_hash, C, `${action}${rollback ? ' with rollback' : ''}: the stopped target is not offered`);
    t.same(answer, own, `${action}${rollback ? ' with rollback' : ''}: the answer is the manifester's own routing`);
  }
});
