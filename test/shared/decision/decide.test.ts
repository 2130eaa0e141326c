import t from 'tap';
import { decide, type StoreQuery } from '../../../src/shared/decision/decide.js';
import type { TransferInfo } from '../../../src/messages/store.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const T = 'f'.repeat(64);
const target = { hash: T, size: 1000 };
const delta: TransferInfo = { kind: 'delta', from: A, to: T, size: 10, hash: 'c'.repeat(64) };

function store(binaries: Record<string, number>, deltas: TransferInfo[] = []): StoreQuery<TransferInfo> {
  return {
    binarySize: (h) => binaries[h],
    delta: (from, to) => deltas.find((d) => d.from === from && d.to === to),
    full: () => undefined,
  };
}

t.test('rows are evaluated in order', async (t) => {
  const base = { versionHash: A, capBytes: 0, allowFullDownload: true };
  t.equal(decide({ ...base, target: undefined, store: store({ [A]: 10 }) }).row, 1);
  t.equal(decide({ ...base, target, versionHash: T, store: store({ [T]: 1000 }) }).row, 2, 'row 2 before any store question');
  t.same(decide({ ...base, target, store: store({ [A]: 10 }, [delta]) }), { row: 3, action: 'serve-delta', delta });
  t.equal(decide({ ...base, target, store: store({ [A]: 10 }) }).row, 4, 'cap 0 disables the cap');
  t.equal(decide({ ...base, target, capBytes: 2000, store: store({ [A]: 10 }) }).row, 4);
  t.same(decide({ ...base, target, capBytes: 500, store: store({ [A]: 10 }) }), { row: 5, action: 'serve-full', oversize: { hash: T, size: 1000 } }, 'an oversize target forces full mode');
  t.same(decide({ ...base, target, capBytes: 500, store: store({ [A]: 600 }) }), { row: 5, action: 'serve-full', oversize: { hash: A, size: 600 } }, 'so does an oversize source');
  t.equal(decide({ ...base, target, capBytes: 500, store: store({ [A]: 600 }, [delta]) }).row, 3, 'an existing delta wins over the cap');
  t.equal(decide({ ...base, target, versionHash: B, store: store({ [A]: 10 }) }).row, 6);
  t.equal(decide({ ...base, target, versionHash: B, allowFullDownload: false, store: store({ [A]: 10 }) }).row, 7);
});
