import t from 'tap';
import { encodeBlockOption, largestBlockWithin, parseBlockOption } from '../../../src/shared/wire/block2.js';

t.test('Block2 option values round-trip for every size and in 0 to 3 bytes', async (t) => {
  for (const size of [16, 32, 64, 128, 256, 512, 1024]) {
    for (const num of [0, 1, 15, 16, 4095, 4096, 0xfffff]) {
      const encoded = encodeBlockOption(num, true, size);
      t.ok(encoded.length <= 3);
      t.same(parseBlockOption(encoded), { num, more: true, size });
    }
  }
  t.equal(encodeBlockOption(0, false, 16).length, 0, 'NUM 0, M 0, SZX 0 is the empty value');
  t.same(parseBlockOption(encodeBlockOption(3, false, 1024)), { num: 3, more: false, size: 1024 });
});

t.test('a reserved SZX or a value over 3 bytes is refused', async (t) => {
  t.equal(parseBlockOption(Buffer.from([0x07])), undefined);
  t.equal(parseBlockOption(Buffer.from([1, 2, 3, 4])), undefined);
});

t.test('the largest block within a byte count is a power of two from 16 to 1024', async (t) => {
  t.equal(largestBlockWithin(0), 16);
  t.equal(largestBlockWithin(1023), 512);
  t.equal(largestBlockWithin(1024), 1024);
  t.equal(largestBlockWithin(1 << 20), 1024);
});
