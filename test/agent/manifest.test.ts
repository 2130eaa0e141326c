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

t.test('delta_format: taken only when the agent asked for it, and only with the endpoint of that format', async (t) => {
  const both = ['bsdiff-lzma', 'bsdiff40'] as const;
  const lzma = { ...signed, delta_format: 'bsdiff-lzma', delta_endpoint: `/delta/${running}/${target}/bsdiff-lzma` };
  t.match(readManifest(lzma, running, [...both]), { kind: 'update', update: { mode: 'delta', format: 'bsdiff-lzma', endpoint: lzma.delta_endpoint } });
  t.match(readManifest(signed, running, [...both]), { kind: 'update', update: { format: 'bsdiff40' } }, 'no delta_format: bsdiff40, always understood');
  type Asked = Array<'bsdiff40' | 'bsdiff-lzma'>;
  const bad: Array<[string, unknown, Asked]> = [
    ['a format the agent did not ask for', lzma, ['bsdiff40']],
    ['a format nobody knows', { ...lzma, delta_format: 'courgette' }, [...both]],
    ['bsdiff-lzma at the bsdiff40 endpoint', { ...lzma, delta_endpoint: signed.delta_endpoint }, [...both]],
    ['bsdiff40 at the bsdiff-lzma endpoint', { ...signed, delta_endpoint: lzma.delta_endpoint }, [...both]],
  ];
  for (const [what, body, asked] of bad) {
    t.throws(() => readManifest(body, running, asked), { code: 'AGENT_MANIFEST_INVALID' }, what);
  }
});

t.test('target_version: the track limit of 128 characters is taken whole, a longer one refused rather than cut', async (t) => {
  const label = 'v'.repeat(128);
  t.match(readManifest({ ...signed, target_version: label }, running), { kind: 'update', update: { targetVersion: label } }, '128 characters, whole');
  t.throws(() => readManifest({ ...signed, target_version: `${label}x` }, running), { code: 'AGENT_MANIFEST_INVALID', message: /target_version longer than 128 characters/ });
});
