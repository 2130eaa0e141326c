import t from 'tap';
import { expectedGenerationBytes } from '../../src/actors/diff-pool/memory.js';

// The store-keeper's expected memory per generation (docs/memory.md): it must follow the
// engine, since the two differ by a factor of three to four.

const MB = 1024 * 1024;

t.test('the native engine: 5 × source + target + 40 MiB', async (t) => {
  t.equal(expectedGenerationBytes('native', 100 * MB, 120 * MB), (500 + 120 + 40) * MB);
  t.equal(expectedGenerationBytes('native', 0, 0), 40 * MB, 'the fixed part alone for empty files');
});

t.test('bsdiff-node: 21 × the larger input', async (t) => {
  t.equal(expectedGenerationBytes('bsdiff-node', 100 * MB, 120 * MB), 21 * 120 * MB);
  t.ok(expectedGenerationBytes('bsdiff-node', 50 * MB, 50 * MB) > expectedGenerationBytes('native', 50 * MB, 50 * MB));
});
