import { getEventListeners } from 'node:events';
import { MessageChannel } from 'node:worker_threads';
import t from 'tap';
import { isUpdaterError } from '../../src/shared/errors.js';
import { exposeOn, withDeadlines, wrapPort } from '../../src/shared/rpc.js';

// A cross-actor call whose peer's thread ends before it answers: the answer can no longer come,
// so the call fails at once with ACTOR_UNAVAILABLE, and so does every later call on that link,
// instead of each holding its caller for the whole deadline (ACTOR_TIMEOUT).

interface Api {
  never(): Promise<number>;
  now(): Promise<number>;
}

t.test('the calls of a link whose other end closes fail at once with ACTOR_UNAVAILABLE', async (t) => {
  const { port1, port2 } = new MessageChannel();
  t.teardown(() => port1.close());
  exposeOn({ never: () => new Promise<number>(() => undefined), now: async () => 1 }, port2);
  // Deadlines far longer than the test: an ACTOR_TIMEOUT would mean the close went unnoticed.
  const peer = withDeadlines<Api>(wrapPort<Api>(port1), { never: 600_000, now: 600_000 }, 'manifester', port1);
  t.equal(await peer.now(), 1, 'an open link answers');
  const waiting = peer.never();
  waiting.catch(() => undefined);
  port2.close(); // what a worker's end does to the ports it holds
  const err = await waiting.then(() => undefined, (e: unknown) => e);
  t.ok(isUpdaterError(err) && err.code === 'ACTOR_UNAVAILABLE', `the waiting call fails with ACTOR_UNAVAILABLE (${String(err)})`);
  t.match(String(err), /manifester went away before it answered/);
  const later = await peer.now().then(() => undefined, (e: unknown) => e);
  t.ok(isUpdaterError(later) && later.code === 'ACTOR_UNAVAILABLE', 'a later call on the closed link fails at once too');
});

t.test('a call that settles leaves nothing behind on its link', async (t) => {
  const { port1, port2 } = new MessageChannel();
  t.teardown(() => {
    port1.close();
    port2.close();
  });
  exposeOn({ never: () => new Promise<number>(() => undefined), now: async () => 2 }, port2);
  const peer = withDeadlines<Api>(wrapPort<Api>(port1), { never: 600_000, now: 600_000 }, 'fleet', port1);
  const answers = [];
  for (let i = 0; i < 100; i++) answers.push(await peer.now());
  t.same(answers, Array(100).fill(2));
  // The link keeps only the calls still waiting: a long-lived link must not grow with every call.
  t.equal(getEventListeners(port1, 'close').length, 1, 'one close listener for the link, none per call');
});
