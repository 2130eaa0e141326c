import t from 'tap';
import { coapChunkSize, selectBlock, unaskedBlockSize } from '../../../../src/actors/coap/device/block2.js';

t.test('selectBlock picks the asked block and says whether more follow', async (t) => {
  t.same(selectBlock({ num: 2, size: 64 }, 200, 100), { kind: 'block', num: 2, size: 64, offset: 128, length: 64, more: true });
  t.same(selectBlock({ num: 3, size: 64 }, 200, 100), { kind: 'block', num: 3, size: 64, offset: 192, length: 8, more: false });
  t.same(selectBlock({ num: 4, size: 64 }, 200, 100), { kind: 'out-of-range' });
  t.same(selectBlock({ num: 0, size: 64 }, 0, 100), { kind: 'block', num: 0, size: 64, offset: 0, length: 0, more: false }, 'an empty transfer is one empty block');
});

t.test('without Block2 the block is no larger than the request', async (t) => {
  t.equal(unaskedBlockSize(5), 16, 'never below the smallest block');
  t.equal(unaskedBlockSize(80), 64);
  t.equal(unaskedBlockSize(150), 128);
  t.equal(unaskedBlockSize(5000), 1024);
  t.same(selectBlock(undefined, 10_000, 150), { kind: 'block', num: 0, size: 128, offset: 0, length: 128, more: true });
});

t.test('the manifest chunk over CoAP is the largest Block2 size not above the configured chunk', async (t) => {
  t.equal(coapChunkSize(65_536), 1024);
  t.equal(coapChunkSize(1024), 1024);
  t.equal(coapChunkSize(1000), 512);
  t.equal(coapChunkSize(16), 16);
});
