import t from 'tap';
import { HeartbeatBatcher } from '../../../src/actors/front-ends/heartbeat-batcher.js';
import type { HeartbeatAnswers, HeartbeatBatch, HeartbeatRequest } from '../../../src/messages/manifester.js';
import { chooseFormat, formatsOffered } from '../../../src/shared/delta-formats.js';
import { serializeError, UpdaterError } from '../../../src/shared/errors.js';

const request = (n: number): HeartbeatRequest => ({ deviceId: `d${n}`, versionHash: String(n).padStart(64, '0'), artifact: n === 2 ? 'nope' : '' });

/** What a manifester answers: the device id as the body, ARTIFACT_NOT_FOUND for the track 'nope'. */
function answer(batch: HeartbeatBatch): HeartbeatAnswers<string> {
  const errors: { at: number; error: ReturnType<typeof serializeError> }[] = [];
  const bodies = batch.deviceIds.map((id, i) => {
    if (batch.artifacts[i] !== 'nope') return `answer for ${id}`;
    errors.push({ at: i, error: serializeError(new UpdaterError('ARTIFACT_NOT_FOUND')) });
    return null;
  });
  return { bodies, errors };
}

const outcome = (s: PromiseSettledResult<string>) => (s.status === 'fulfilled' ? s.value : (s.reason as UpdaterError).code);

t.test('heartbeats asked together go in one message, one array per field, and each gets its own answer', async (t) => {
  const asked: HeartbeatBatch[] = [];
  const batcher = new HeartbeatBatcher(async (batch) => {
    asked.push(batch);
    return answer(batch);
  });
  const settled = await Promise.allSettled([0, 1, 2, 3].map((n) => batcher.heartbeat(request(n))));
  t.equal(asked.length, 1, 'one message for four heartbeats');
  t.same(asked[0], { deviceIds: ['d0', 'd1', 'd2', 'd3'], versionHashes: [0, 1, 2, 3].map((n) => request(n).versionHash), artifacts: ['', '', 'nope', ''] });
  t.same(settled.map(outcome), ['answer for d0', 'answer for d1', 'ARTIFACT_NOT_FOUND', 'answer for d3']);
  await batcher.heartbeat(request(5));
  t.equal(asked.length, 2, 'a later heartbeat goes in a message of its own');
});

t.test('while a message is out, the heartbeats that arrive wait for its answer and then go together', async (t) => {
  const asked: HeartbeatBatch[] = [];
  const release: (() => void)[] = [];
  const batcher = new HeartbeatBatcher<string>((batch) => {
    asked.push(batch);
    return new Promise<HeartbeatAnswers<string>>((resolve) => release.push(() => resolve(answer(batch))));
  });
  const first = batcher.heartbeat(request(0));
  await new Promise((r) => setImmediate(r));
  t.equal(asked.length, 1, 'the first heartbeat went at once');
  const later = [1, 3, 4].map((n) => batcher.heartbeat(request(n)));
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  t.equal(asked.length, 1, 'nothing more is sent while the first message is out');
  release.shift()!();
  t.equal(await first, 'answer for d0');
  for (let i = 0; i < 2; i++) await new Promise((r) => setImmediate(r));
  t.equal(asked.length, 2, 'the waiting heartbeats went once the answer came');
  t.same(asked[1]!.deviceIds, ['d1', 'd3', 'd4'], 'in one message, in order');
  release.shift()!();
  t.same(await Promise.all(later), ['answer for d1', 'answer for d3', 'answer for d4']);
});

t.test('a failed message rejects every heartbeat it carried, and the next message still goes', async (t) => {
  let fail = true;
  const batcher = new HeartbeatBatcher(async (batch) => {
    if (fail) throw new UpdaterError('ACTOR_TIMEOUT');
    return answer(batch);
  });
  const results = await Promise.allSettled([batcher.heartbeat(request(0)), batcher.heartbeat(request(1))]);
  t.same(results.map((r) => r.status === 'rejected' && (r.reason as UpdaterError).code), ['ACTOR_TIMEOUT', 'ACTOR_TIMEOUT']);
  fail = false;
  t.equal(await batcher.heartbeat(request(3)), 'answer for d3');
});

t.test('an answer with fewer bodies than heartbeats rejects the ones left without one', async (t) => {
  const batcher = new HeartbeatBatcher(async () => ({ bodies: ['only one'], errors: [] }));
  const settled = await Promise.allSettled([batcher.heartbeat(request(0)), batcher.heartbeat(request(1))]);
  t.equal(outcome(settled[0]!), 'only one');
  t.match((settled[1] as PromiseRejectedResult).reason.message, /fewer heartbeats than asked/);
});

t.test('the formats a heartbeat names reach the manifester meaning what they meant to the front-end', async (t) => {
  // HeartbeatBatch.formats joins each heartbeat's names with commas and the manifester splits
  // them again. A device may send a name with a comma in it (one string "bsdiff-lzma,bsdiff40"
  // where it meant a list): to the front-end that is one name it does not know, skipped, so it
  // answers bsdiff40 (docs/protocol.md); the manifester must choose the same format, not the
  // two names the split makes of it.
  const asked: HeartbeatBatch[] = [];
  const batcher = new HeartbeatBatcher(async (batch) => {
    asked.push(batch);
    return answer(batch);
  });
  const lists = [['bsdiff-lzma,bsdiff40'], ['x,bsdiff-lzma', 'bsdiff40'], ['bsdiff-lzma'], [',', 'bsdiff40'], ['bsdiff40', 'bsdiff-lzma']];
  await Promise.all(lists.map((deltaFormats, n) => batcher.heartbeat({ ...request(n === 2 ? 9 : n), deltaFormats })));
  const offered = formatsOffered('native');
  t.equal(asked.length, 1);
  const sent = asked[0]!.formats!;
  lists.forEach((names, i) => {
    const read = sent[i] ? sent[i]!.split(',') : undefined;
    t.equal(chooseFormat(read, offered), chooseFormat(names, offered), `${JSON.stringify(names)}: the manifester chooses what the front-end chose`);
  });
  t.equal(sent[2], 'bsdiff-lzma', 'names without commas travel as before');
});
