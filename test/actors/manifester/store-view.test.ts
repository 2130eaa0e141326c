import t from 'tap';
import type { StoreEvent, TransferInfo } from '../../../src/messages/store.js';
import { StoreView } from '../../../src/actors/manifester/store-view.js';

const hash = (c: string) => c.repeat(64);
const delta = (from: string, to: string, size = 10): TransferInfo => ({ kind: 'delta', from: hash(from), to: hash(to), size, hash: hash('e') });
const full = (to: string): TransferInfo => ({ kind: 'full', to: hash(to), size: 5, hash: hash('f') });

function viewWithRemovals() {
  const removed: TransferInfo[] = [];
  return { view: new StoreView((t) => removed.push(t)), removed };
}

t.test('events that arrive before the first snapshot wait for it and apply only when newer', async (t) => {
  const { view } = viewWithRemovals();
  view.apply({ seq: 3, type: 'binary-registered', binary: { hash: hash('a'), size: 100 } });
  view.apply({ seq: 5, type: 'transfer-ready', transfer: delta('a', 'b') });
  t.equal(view.binarySize(hash('a')), undefined, 'held, not applied, before the snapshot');
  view.applySnapshot({ seq: 4, binaries: [{ hash: hash('b'), size: 200 }], transfers: [] });
  t.equal(view.binarySize(hash('a')), undefined, 'seq 3 is older than the snapshot: dropped');
  t.equal(view.binarySize(hash('b')), 200);
  t.same(view.delta(hash('a'), hash('b')), delta('a', 'b'), 'seq 5 is newer: applied after the snapshot');
});

t.test('a replayed or out-of-order event is ignored', async (t) => {
  const { view } = viewWithRemovals();
  view.applySnapshot({ seq: 0, binaries: [], transfers: [] });
  const ready: StoreEvent = { seq: 1, type: 'transfer-ready', transfer: full('a') };
  view.apply(ready);
  view.apply({ seq: 2, type: 'transfer-removed', transfer: full('a') });
  view.apply(ready);
  t.equal(view.full(hash('a')), undefined, 'the older ready does not bring back a removed file');
});

t.test('removals tell the signed-manifest cache, including everything a resync drops', async (t) => {
  const { view, removed } = viewWithRemovals();
  view.applySnapshot({ seq: 0, binaries: [], transfers: [delta('a', 'b'), full('b')] });
  view.apply({ seq: 1, type: 'transfer-removed', transfer: delta('a', 'b') });
  t.same(removed, [delta('a', 'b')]);
  t.equal(view.delta(hash('a'), hash('b')), undefined);

  removed.length = 0;
  view.beginResync();
  view.apply({ seq: 7, type: 'binary-registered', binary: { hash: hash('c'), size: 1 } });
  t.equal(view.binarySize(hash('c')), undefined, 'held during the resync');
  view.applySnapshot({ seq: 6, binaries: [], transfers: [] });
  t.same(removed, [full('b')], 'what the old replica promised is forgotten');
  t.equal(view.binarySize(hash('c')), 1, 'the held newer event applies after the snapshot');
  view.apply({ seq: 8, type: 'binary-removed', hash: hash('c') });
  t.equal(view.binarySize(hash('c')), undefined);
});
