import t from 'tap';
import { HeartbeatBatcher } from '../../src/actors/heartbeat-batcher.js';
import type { HeartbeatOutcome, HeartbeatRequest, Manifest } from '../../src/messages/manifester.js';
import { serializeError, UpdaterError } from '../../src/shared/errors.js';

const request = (n: number): HeartbeatRequest => ({ deviceId: `d${n}`, versionHash: String(n).padStart(64, '0'), artifact: n === 2 ? 'nope' : '' });

t.test('heartbeats asked together go in one message and each gets its own answer', async (t) => {
  const asked: HeartbeatRequest[][] = [];
  const batcher = new HeartbeatBatcher(async (batch) => {
    asked.push(batch);
    return batch.map((r): HeartbeatOutcome => (r.artifact === 'nope'
      ? { error: serializeError(new UpdaterError('ARTIFACT_NOT_FOUND')) }
      : { value: { target_version: r.deviceId } as Manifest }));
  });
  const answers = [0, 1, 2, 3].map((n) => batcher.heartbeat(request(n)));
  const settled = await Promise.allSettled(answers);
  t.equal(asked.length, 1, 'one message for four heartbeats');
  t.same(settled.map((s) => (s.status === 'fulfilled' ? s.value.target_version : (s.reason as UpdaterError).code)), ['d0', 'd1', 'ARTIFACT_NOT_FOUND', 'd3']);
  await batcher.heartbeat(request(5));
  t.equal(asked.length, 2, 'a later heartbeat goes in a message of its own');
});

t.test('a failed message rejects every heartbeat it carried', async (t) => {
  const batcher = new HeartbeatBatcher(async () => {
    throw new UpdaterError('ACTOR_TIMEOUT');
  });
  const results = await Promise.allSettled([batcher.heartbeat(request(0)), batcher.heartbeat(request(1))]);
  t.same(results.map((r) => r.status === 'rejected' && (r.reason as UpdaterError).code), ['ACTOR_TIMEOUT', 'ACTOR_TIMEOUT']);
});
