import t from 'tap';
import { LongPollPublisher } from '../../src/shared/long-poll.js';

// The long poll that carries snapshots to the front-ends (the manifester's decisions, the
// fleet's targeting index), and the acknowledgement that lets an operator's change return only
// once every front-end answers from it.

function publisher(settleMs = 60_000) {
  let builds = 0;
  let nowMs = 1_000_000;
  const p = new LongPollPublisher<'json' | 'cbor', Built>((version, kind) => {
    builds++;
    return { version, kind };
  }, (seconds) => deliveries.push(seconds), () => nowMs, settleMs);
  const deliveries: number[] = [];
  t.teardown(() => p.stop());
  return { p, builds: () => builds, deliveries, advance: (ms: number) => (nowMs += ms) };
}

interface Built {
  readonly version: string;
  readonly kind: string;
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

t.test('a front-end that knows nothing is answered at once; one that is current waits for the next change', async (t) => {
  const { p, builds } = publisher();
  const first = await p.poll('http', '', 'json');
  t.equal(first?.version, p.version);
  t.equal(first?.kind, 'json', 'built for the kind asked');
  let next: Built | null | undefined;
  const held = p.poll('http', first!.version, 'json').then((s) => (next = s));
  await turn();
  t.equal(next, undefined, 'nothing changed: the poll is held');
  p.changed();
  p.changed();
  await held;
  t.not(next?.version, first!.version, 'a change answers it with a new version');
  t.equal(builds(), 2, 'two changes together made one snapshot');
});

t.test('a version of another start of the manifester is never taken for the current one', async (t) => {
  const { p } = publisher();
  const other = publisher().p;
  const theirs = (await other.poll('coap', '', 'cbor'))!.version;
  const ours = await p.poll('coap', theirs, 'cbor');
  t.ok(ours && ours.version !== theirs, 'answered at once with this start\'s snapshot');
});

t.test('settled waits until every polling front-end holds the change, not for front-ends gone quiet', async (t) => {
  const { p, advance, deliveries } = publisher();
  const a = (await p.poll('http', '', 'json'))!;
  const b = (await p.poll('coap', '', 'cbor'))!;
  void p.poll('http', a.version, 'json');
  void p.poll('coap', b.version, 'cbor');
  deliveries.length = 0;
  p.changed();
  advance(7);
  let settled = false;
  const done = p.settled().then(() => (settled = true));
  await turn();
  t.notOk(settled, 'not before the front-ends acknowledged');
  void p.poll('http', p.version, 'json');
  await turn();
  t.notOk(settled, 'not while one front-end still answers from the old snapshot');
  void p.poll('coap', p.version, 'cbor');
  await done;
  t.ok(settled, 'once both hold it');
  t.same(deliveries, [0.007], 'the change\'s delivery time is observed once, when the last front-end holds it');

  p.changed();
  advance(61_000);
  await p.settled();
  t.pass('a front-end that has not asked for a minute is not waited for');
});

t.test('settled gives up after its bound when a front-end does not acknowledge', async (t) => {
  const { p } = publisher(30);
  await p.poll('http', '', 'json');
  p.changed();
  await p.settled();
  t.pass('returned after the bound');
});

t.test('stop answers every held poll with null and refuses later ones, so no front-end asks in a loop', async (t) => {
  const { p } = publisher();
  const s = (await p.poll('http', '', 'json'))!;
  const held = p.poll('http', s.version, 'json');
  p.stop();
  t.equal(await held, null);
  await t.rejects(p.poll('http', s.version, 'json'), { code: 'ACTOR_UNAVAILABLE' }, 'a later one is refused (the front-end waits before asking again)');
});
