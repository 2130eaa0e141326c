import t from 'tap';
import { parseRange } from '../../../../src/actors/http/device/range.js';

t.test('single byte ranges', async (t) => {
  t.same(parseRange('', 100), { kind: 'full' });
  t.same(parseRange('bytes=0-9', 100), { kind: 'partial', start: 0, end: 9 });
  t.same(parseRange('bytes=90-', 100), { kind: 'partial', start: 90, end: 99 });
  t.same(parseRange('bytes=90-500', 100), { kind: 'partial', start: 90, end: 99 }, 'an end past the size is clamped');
  t.same(parseRange('bytes=-10', 100), { kind: 'partial', start: 90, end: 99 });
  t.same(parseRange('bytes=-500', 100), { kind: 'partial', start: 0, end: 99 });
  t.same(parseRange('bytes=100-', 100), { kind: 'unsatisfiable' });
  t.same(parseRange('bytes=-0', 100), { kind: 'unsatisfiable' });
  t.same(parseRange('bytes=5-3', 100), { kind: 'full' }, 'an invalid range is ignored');
  t.same(parseRange('bytes=0-1,5-6', 100), { kind: 'full' }, 'several ranges: the whole body');
  t.same(parseRange('items=0-1', 100), { kind: 'full' });
  t.same(parseRange('bytes=99999999999999999999-', 100), { kind: 'unsatisfiable' });
});
