import t from 'tap';
import { FAILED_GENERATION_COOLDOWN_MS, GenerationRequests, STORE_REFUSED_COOLDOWN_MS } from '../../../src/actors/manifester/generation-requests.js';
import { UpdaterError } from '../../../src/shared/errors.js';

interface Asked { method: string; args: unknown[]; settle(err?: Error): void }

/** A store that records every request and lets the test settle each one. */
function fakeStore() {
  const asked: Asked[] = [];
  const askStore = (run: (store: any) => Promise<unknown>) => new Promise<unknown>((resolve, reject) => {
    const store = new Proxy({}, {
      get: (_t, method: string) => (...args: unknown[]) => {
        asked.push({ method, args, settle: (err) => (err ? reject(err) : resolve(undefined)) });
        return new Promise(() => undefined);
      },
    });
    void run(store);
  });
  return { asked, askStore };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));
const quietLog = { warn: () => undefined };

t.test('many heartbeats wanting one file make one request while it is under way', async (t) => {
  const { asked, askStore } = fakeStore();
  const requests = new GenerationRequests(askStore, quietLog);
  requests.ensureDelta('a', 'b');
  requests.ensureDelta('a', 'b');
  requests.ensureFull('b');
  t.same(asked.map((a) => [a.method, ...a.args]), [['ensureDelta', 'a', 'b'], ['ensureFull', 'b']]);
  asked[0]!.settle();
  await settled();
  requests.ensureDelta('a', 'b');
  t.equal(asked.length, 3, 'once it finished, a new request may go out');
});

t.test('a failed generation cools down before it is asked for again', async (t) => {
  let now = 1_000_000;
  const { asked, askStore } = fakeStore();
  const warned: unknown[] = [];
  const requests = new GenerationRequests(askStore, { warn: (o: unknown) => warned.push(o) }, () => now);
  requests.ensureFull('x');
  asked[0]!.settle(new Error('disk full'));
  await settled();
  t.equal(warned.length, 1, 'the failure is logged once');
  requests.ensureFull('x');
  now += FAILED_GENERATION_COOLDOWN_MS - 1;
  requests.ensureFull('x');
  t.equal(asked.length, 1, 'not retried during the cooldown');
  now += 1;
  requests.ensureFull('x');
  t.equal(asked.length, 2, 'retried once the cooldown has passed');
});

t.test('forgetPending lets a request go out again after a store-keeper restart', async (t) => {
  const { asked, askStore } = fakeStore();
  const requests = new GenerationRequests(askStore, quietLog);
  requests.ensureFull('y');
  requests.forgetPending();
  requests.ensureFull('y');
  t.equal(asked.length, 2);
});

t.test('a full or read-only store is asked again after a short cooldown', async (t) => {
  let now = 1_000_000;
  const { asked, askStore } = fakeStore();
  const requests = new GenerationRequests(askStore, quietLog, () => now);
  requests.ensureFull('z');
  asked[0]!.settle(new UpdaterError('STORE_FULL'));
  await settled();
  now += STORE_REFUSED_COOLDOWN_MS - 1;
  requests.ensureFull('z');
  t.equal(asked.length, 1);
  now += 1;
  requests.ensureFull('z');
  t.equal(asked.length, 2, 'well before the long cooldown of a failed generation');
});
