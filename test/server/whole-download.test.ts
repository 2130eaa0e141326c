import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { makeFixture, noise, sha256Hex } from '../helpers/fixture.js';
import { heartbeatUntilSigned } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';
import { needs } from '../helpers/system-tools.js';

const run = promisify(execFile);

// A client that is not our agent (curl) asks for a large full-mode file in one GET. The file
// sits in the hot cache (shared memory), the path that once wrote chunk after chunk without
// letting the socket drain and left downloads hanging mid-body.
t.test('curl downloads a 24 MiB hot-cache file whole, again and again', needs('curl'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  // Random bytes stay ~24 MiB after zstd, so the whole body is large on the wire.
  const v2 = await fixture.writeBinary('v2.bin', noise(24 * 1024 * 1024, 'whole'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }], {
    allow_full_download: true,
    store: { full_compression_level: 1, target_cache_mb: 256 },
  });
  t.teardown(() => server.stop());
  const manifest = await heartbeatUntilSigned(server.url, sha256Hex(Buffer.from('unknown build')), undefined, 120_000);
  t.ok(manifest.delta_size > 20 * 1024 * 1024, `the full file is large (${manifest.delta_size} bytes)`);
  const url = `${server.url}${manifest.binary_endpoint}`;
  const out = join(fixture.dir, 'download.zst');
  const rounds = 8;
  let whole = 0;
  for (let round = 0; round < rounds; round++) {
    // --max-time only bounds a stall (a whole download takes well under a second here).
    const result = await run('curl', ['-sS', '--max-time', '15', '-o', out, '-w', '%{http_code} %{size_download}', url]).catch((err) => ({ stdout: `failed: ${err.message}` }));
    const body = await readFile(out).catch(() => Buffer.alloc(0));
    if (result.stdout.startsWith('200 ') && body.length === manifest.delta_size && sha256Hex(body) === manifest.delta_hash) whole++;
    else t.fail(`round ${round}: ${result.stdout}, ${body.length} of ${manifest.delta_size} bytes`);
  }
  t.equal(whole, rounds, 'every download arrived whole and hashes to delta_hash');
});
