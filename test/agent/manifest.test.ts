import t from 'tap';
import { readManifest } from '../../agent/manifest.js';

const running = 'a'.repeat(64);
const target = 'b'.repeat(64);
const transfer = 'c'.repeat(64);
const signed = {
  update_available: true, target_version: '2.0.0', target_hash: target, target_size: 1000, delta_size: 100, delta_hash: transfer,
  chunk_size: 65536, total_chunks: 1, signature: 'd'.repeat(128), delta_endpoint: `/delta/${running}/${target}`, artifact: 'app',
};

t.test('the three kinds of answer are told apart', async (t) => {
  t.same(readManifest({ ...signed, update_available: false }, running), { kind: 'up-to-date' });
  const { signature: _s, delta_endpoint: _d, ...unsigned } = signed;
  t.same(readManifest({ ...unsigned, retry_after: 5 }, running), { kind: 'retry-later', retryAfterSeconds: 5 });
  t.match(readManifest(signed, running), { kind: 'update', update: { mode: 'delta', endpoint: signed.delta_endpoint, transferSize: 100 } });
  const { delta_endpoint: _e, ...full } = signed;
  t.match(readManifest({ ...full, binary_endpoint: `/binary/${target}` }, running), { kind: 'update', update: { mode: 'full' } });
});

t.test('a malformed or misleading manifest is refused before anything is fetched', async (t) => {
  const bad: Array<[string, unknown]> = [
    ['not an object', 'yes'],
    ['no update_available', { ...signed, update_available: 'true' }],
    ['unsigned without retry_after', { ...signed, signature: undefined }],
    ['short signature', { ...signed, signature: 'ab' }],
    ['uppercase target hash', { ...signed, target_hash: target.toUpperCase() }],
    ['negative delta size', { ...signed, delta_size: -1 }],
    ['both endpoints', { ...signed, binary_endpoint: `/binary/${target}` }],
    ['a delta from another version', { ...signed, delta_endpoint: `/delta/${transfer}/${target}` }],
    ['a path that escapes', { ...signed, delta_endpoint: `/delta/${running}/../../etc/passwd` }],
    ['an absolute address', { ...signed, delta_endpoint: `http://evil.example/delta/${running}/${target}` }],
    ['a binary that is not the target', { ...signed, delta_endpoint: undefined, binary_endpoint: `/binary/${transfer}` }],
  ];
  for (const [what, body] of bad) {
    t.throws(() => readManifest(body, running), { code: 'AGENT_MANIFEST_INVALID' }, what);
  }
});
