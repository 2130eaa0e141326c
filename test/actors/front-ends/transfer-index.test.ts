import t from 'tap';
import { TransferIndex } from '../../../src/actors/front-ends/transfer-index.js';
import { transferKey } from '../../../src/messages/decision-snapshot.js';
import type { TransferInfo } from '../../../src/messages/store.js';
import { DELTA_FORMATS, type DeltaFormat } from '../../../src/shared/delta-formats.js';

// The front-end finds a snapshot's transfers through this index instead of the snapshot's own
// keys (transferKey): for every pair, format and full file, it must find exactly what the keys
// find, nothing for what they do not hold.

const [A, B, C, D] = ['a', 'b', 'c', 'd'].map((c) => c.repeat(64)) as [string, string, string, string];
const hash = (n: number) => String(n).padStart(64, '0');
const delta = (from: string, to: string, n: number, format?: DeltaFormat): TransferInfo => ({ kind: 'delta', from, to, size: n, hash: hash(n), ...(format ? { format } : {}) });
const full = (to: string, n: number): TransferInfo => ({ kind: 'full', to, size: n, hash: hash(n) });

t.test('finds what the snapshot\'s keys find, and nothing else', async (t) => {
  const transfers = [
    delta(A, B, 1), delta(A, B, 2, 'bsdiff-lzma'), delta(A, C, 3, 'bsdiff-lzma'), delta(B, C, 4), delta(D, A, 5),
    full(B, 6), full(C, 7),
  ];
  const byKey = new Map(transfers.map((x) => [transferKey(x.kind, x.to, x.from, x.format), x]));
  const index = new TransferIndex(byKey.values());
  let found = 0;
  for (const from of [A, B, C, D]) {
    for (const to of [A, B, C, D]) {
      for (const format of [undefined, ...DELTA_FORMATS]) {
        const expected = byKey.get(transferKey('delta', to, from, format));
        if (expected) found++;
        t.equal(index.delta(from, to, format), expected, `delta ${from[0]}>${to[0]} ${format ?? '(default)'}`);
      }
    }
    t.equal(index.full(from), byKey.get(transferKey('full', from)), `full ${from[0]}`);
  }
  t.equal(found, 8, 'the bsdiff40 deltas are found both with and without their format named');
});

t.test('an empty snapshot holds nothing', async (t) => {
  const index = new TransferIndex([]);
  t.equal(index.delta(A, B), undefined);
  t.equal(index.full(B), undefined);
});
