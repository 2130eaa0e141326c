import { get } from 'node:http';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { firmware, makeFixture, nextVersion, noise, randomHash, type Fixture } from '../helpers/fixture.js';
import { heartbeat, heartbeatUntilSigned, metricValue } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';
import { needs } from '../helpers/system-tools.js';

// Spec 3.3 on a real store directory, with file ages set by hand.

const HOUR_AGO = () => new Date(Date.now() - 2 * 3600_000);

async function publish(url: string, name: string, version: string, binary: string): Promise<void> {
  const answer = await adminCall(url, 'POST', '/admin/artifacts', { name, version, binary });
  if (answer.status !== 200) throw new Error(`publish answered ${answer.status}: ${JSON.stringify(answer.json)}`);
}

/** `count` versions of `size` bytes, each the next of the one before; the first from `bytes`. */
async function versions(fixture: Fixture, count: number, size: number, seed: string, bytes = firmware) {
  const out = [await fixture.writeBinary(`${seed}-1.bin`, bytes(size, `${seed}-1`))];
  for (let i = 2; i <= count; i++) out.push(await fixture.writeBinary(`${seed}-${i}.bin`, nextVersion(await readFile(out[i - 2]!.path), `${seed}-${i}`)));
  return out;
}

t.test('derived-file rules 1-4 and orphan binaries, through POST /admin/gc', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const [v1, v2, v3] = await versions(fixture, 3, 300_000, 'ret');
  const server = await startTestServer(fixture, [], {
    allow_full_download: true,
    retention: { history_depth: 1, delta_max_age: '1h', collect_orphan_binaries: true, orphan_binary_min_age: '0s' },
  });
  t.teardown(() => server.stop());
  for (const [i, v] of [v1!, v2!, v3!].entries()) await publish(server.url, 'app', `${i + 1}.0`, v.path);
  const deltas = join(fixture.dir, 'store', 'deltas');
  const binaries = join(fixture.dir, 'store', 'binaries');

  const fromV1 = await heartbeatUntilSigned(server.url, v1!.hash, 'app');
  t.ok(fromV1.delta_endpoint, 'v1 is still in the store, so a delta is made for it');
  await heartbeatUntilSigned(server.url, v2!.hash, 'app');
  await eventually('full files of v1..v3', () => readdir(deltas), (names) => names.filter((n) => n.endsWith('.full.zst')).length === 3);
  const stranger = `${randomHash()}_${v3!.hash}.delta.zst`;
  await writeFile(join(deltas, stranger), 'not a real delta');
  await writeFile(join(deltas, 'notes.txt'), 'an operator left this here');
  const agedDelta = `${v2!.hash}_${v3!.hash}.delta.zst`;
  await utimes(join(deltas, agedDelta), HOUR_AGO(), HOUR_AGO());

  const gc = await adminCall(server.url, 'POST', '/admin/gc');
  t.equal(gc.status, 200);
  t.same(gc.json.removed, { deltas: 3, full: 2, binaries: 1 });
  t.equal(gc.json.ignored, 1, 'notes.txt is not a derived-file name');
  t.ok(gc.json.bytes_freed > 300_000);
  const left = (await readdir(deltas)).sort();
  t.same(left, [`${v3!.hash}.full.zst`, 'notes.txt'].sort(), 'rule 2 took the full files of superseded targets, rule 3 the deltas from v1 and from an unknown source, rule 4 the aged delta');
  t.same((await readdir(binaries)).sort(), [`${v2!.hash}.bin`, `${v3!.hash}.bin`].sort(), 'v1 fell out of the history and was collected; v2 (history) and v3 (current) stay');

  const afterV1 = await heartbeatUntilSigned(server.url, v1!.hash, 'app');
  t.equal(afterV1.binary_endpoint, `/binary/${v3!.hash}`, 'a device on the collected version gets full mode');
  t.notOk(afterV1.delta_endpoint, 'never the delta it was promised before');
  const afterV2 = await heartbeat(server.url, v2!.hash, 'app');
  t.ok(afterV2.json.retry_after > 0 && !afterV2.json.signature, 'the aged delta is regenerated on demand');
});

t.test('rule 5 evicts the oldest survivors until the deltas directory fits', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const [v1, v2] = await versions(fixture, 2, 1_400_000, 'cap');
  const server = await startTestServer(fixture, [], { retention: { deltas_max_total_mb: 1 } });
  t.teardown(() => server.stop());
  await publish(server.url, 'app', '1', v1!.path);
  await publish(server.url, 'app', '2', v2!.path);
  await heartbeatUntilSigned(server.url, v1!.hash, 'app');
  const deltas = join(fixture.dir, 'store', 'deltas');
  const full = `${v2!.hash}.full.zst`;
  await eventually('full file of v2', () => readdir(deltas), (names) => names.includes(full));
  await utimes(join(deltas, full), HOUR_AGO(), HOUR_AGO());
  const gc = await adminCall(server.url, 'POST', '/admin/gc');
  t.equal(gc.status, 200);
  const left = await readdir(deltas);
  t.notOk(left.includes(full), 'the oldest (and largest) survivor went');
  t.ok(left.includes(`${v1!.hash}_${v2!.hash}.delta.zst`), 'the newer delta stays once the directory fits');
  t.notOk(left.includes(`${v1!.hash}.full.zst`), 'rule 2 still applies first');
});

t.test('a sweep while a download of the same file is in flight completes the download', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  // Only the size matters here, so noise(): firmware() spends over a second on 16 MB.
  const [v1, v2] = await versions(fixture, 2, 16_000_000, 'race', noise);
  const server = await startTestServer(fixture, [], { allow_full_download: true, store: { hot_delta_cache_mb: 0 } });
  t.teardown(() => server.stop());
  await publish(server.url, 'app', '1', v1!.path);
  const manifest = await heartbeatUntilSigned(server.url, randomHash(), 'app');
  t.equal(manifest.binary_endpoint, `/binary/${v1!.hash}`);

  const hasher = createHash('sha256');
  let received = 0;
  const finished = new Promise<number>((resolve, reject) => {
    get(`${server.url}${manifest.binary_endpoint}`, (res) => {
      res.on('data', (chunk: Buffer) => {
        hasher.update(chunk);
        received += chunk.length;
      });
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
      // After the first chunk, hold the transfer open while the file is swept away. The
      // target is larger than the socket buffers, so most bytes are still to be read from disk.
      res.once('data', () => {
        res.pause();
        (async () => {
          await publish(server.url, 'app', '2', v2!.path);
          const gc = await adminCall(server.url, 'POST', '/admin/gc');
          t.equal(gc.json.removed.full, 1, 'the sweep removed the file being downloaded');
          t.notOk((await readdir(join(fixture.dir, 'store', 'deltas'))).includes(`${v1!.hash}.full.zst`));
          t.ok(received < manifest.delta_size, 'while the download was still under way');
        })().then(() => res.resume(), reject);
      });
    }).on('error', reject);
  });
  t.equal(await finished, 200);
  t.equal(received, manifest.delta_size, 'every byte arrived');
  t.equal(hasher.digest('hex'), manifest.delta_hash, 'and they hash to delta_hash');
});

t.test('the first automatic sweep comes one interval after start, never at boot', needs('bsdiff', 'zstd'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const [v1] = await versions(fixture, 1, 10_000, 'sched');
  const stray = `${randomHash()}_${v1!.hash}.delta.zst`;
  const deltas = join(fixture.dir, 'store', 'deltas');
  const warmup = await startTestServer(fixture, [{ name: 'app', version: '1', binary: v1!.path }]);
  await warmup.stop();
  // A real delta for some other source, so that the start-up check keeps it: retention alone decides.
  const other = join(fixture.dir, 'other.bin');
  await writeFile(other, randomBytes(5_000));
  execFileSync('bsdiff', [other, v1!.path, join(fixture.dir, 'stray.patch')]);
  execFileSync('zstd', ['-q', '-f', join(fixture.dir, 'stray.patch'), '-o', join(deltas, stray)]);
  const server = await startTestServer(fixture, [{ name: 'app', version: '1', binary: v1!.path }], { retention: { enabled: true, interval: '4s' } });
  t.teardown(() => server.stop());
  t.ok((await readdir(deltas)).includes(stray), 'nothing is swept at boot');
  const metrics = async () => metricValue(await (await fetch(`${server.url}/metrics`)).text(), 'updater_retention_sweeps_total');
  t.equal(await metrics(), 0);
  await eventually('the scheduled sweep', () => readdir(deltas), (names) => !names.includes(stray), 30_000);
  t.ok((await metrics()) >= 1, 'the sweep was the scheduled one');
});
