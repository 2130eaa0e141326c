import { readdir } from 'node:fs/promises';
import t from 'tap';
import { expectExit, logged, makeDevice, type AgentRun } from '../helpers/agent.js';
import { firmware, makeFixture, nextVersion, sha256Hex } from '../helpers/fixture.js';
import { heartbeatUntilSigned } from '../helpers/http.js';
import { startProxy } from '../helpers/proxy.js';
import { startTestServer } from '../helpers/server.js';

// The three checks of the cycle (docs/agent.md, "The cycle") and the download behaviour, against the real server with a
// proxy in between that plays the hostile network.

const fixture = await makeFixture();
t.teardown(() => fixture.cleanup());
const v1Bytes = firmware(1_500_000, 'c1');
const v2Bytes = nextVersion(v1Bytes, 'c2');
const v1 = await fixture.writeBinary('v1.bin', v1Bytes);
const v2 = await fixture.writeBinary('v2.bin', v2Bytes);
const server = await startTestServer(fixture, [
  { name: 'app', version: '2.0.0', binary: v2.path },
  { name: 'legacy', version: '1.0.0', binary: v1.path },
], { default_artifact: 'app', allow_full_download: true });
t.teardown(() => server.stop());
/** A binary the server has never seen: such a device is served full mode. */
const strangerBytes = firmware(200_000, 'stranger');
// The agent asks for bsdiff-lzma first by default: its delta is the one it downloads.
const deltaManifest = await heartbeatUntilSigned(server.url, v1.hash, 'app', 60_000, undefined, ['bsdiff-lzma', 'bsdiff40']);
await heartbeatUntilSigned(server.url, v1.hash, 'app');
const fullManifest = await heartbeatUntilSigned(server.url, sha256Hex(strangerBytes), 'app');

function failedWith(run: AgentRun, code: string): boolean {
  return run.lines.some((l) => l.msg === 'update cycle failed' && l.code === code);
}

t.test('full mode: a device whose binary the server does not hold installs the whole target', async (t) => {
  const device = await makeDevice(fixture, server.url, strangerBytes);
  t.ok(fullManifest.binary_endpoint, 'the server offers full mode');
  expectExit(t, await device.runOnce());
  t.same(await device.current(), { slot: 'slot-b', hash: v2.hash });
  const boot = await device.runOnce();
  expectExit(t, boot);
  t.ok(logged(boot, 'update confirmed'));
});

t.test('a forged signature downloads zero bytes and changes nothing', async (t) => {
  const proxy = await startProxy(server.url);
  t.teardown(() => proxy.close());
  proxy.rewriteManifest = (m) => (m.signature ? { ...m, signature: m.signature.replace(/^./, (c: string) => (c === '0' ? '1' : '0')) } : m);
  const device = await makeDevice(fixture, proxy.url, v1Bytes);
  const run = await device.runOnce();
  expectExit(t, run, 1, 'the cycle ends in error');
  t.ok(failedWith(run, 'AGENT_SIGNATURE_INVALID'), 'the signature check failed');
  t.equal(proxy.downloads().length, 0, 'no download was even requested');
  t.equal(proxy.downloadBytes, 0);
  t.same(await device.current(), { slot: 'slot-a', hash: v1.hash });
  t.same((await readdir(device.slotDir)).sort(), ['.agent-state.json', 'current', 'slot-a']);
});

t.test('a corrupted transfer is never patched', async (t) => {
  const proxy = await startProxy(server.url);
  t.teardown(() => proxy.close());
  proxy.corruptDownloadAt = 100;
  const device = await makeDevice(fixture, proxy.url, v1Bytes);
  const run = await device.runOnce();
  expectExit(t, run, 1, 'the cycle ends in error');
  t.ok(failedWith(run, 'AGENT_TRANSFER_HASH_MISMATCH'), 'the transfer hash check failed');
  t.equal(proxy.downloadBytes, deltaManifest.delta_size, 'the whole transfer arrived');
  const names = await readdir(device.slotDir);
  t.notOk(names.includes('slot-b'), 'nothing was written to the other slot');
  t.notOk(names.includes('.patch'), 'the patch was never decompressed');
  t.notOk(names.includes('.download.part'), 'the bad transfer is discarded');
  t.same(await device.current(), { slot: 'slot-a', hash: v1.hash });
});

t.test('a delta that rebuilds the wrong bytes is never activated', async (t) => {
  // The device's slot-a differs from v1 by one byte, but the proxy tells the server it runs
  // v1: the signed delta is genuine, the transfer hash matches, and the rebuilt slot is wrong.
  const damaged = Buffer.from(v1Bytes);
  damaged[1000] = (damaged[1000] ?? 0) ^ 0xff;
  const damagedHash = sha256Hex(damaged);
  const proxy = await startProxy(server.url);
  t.teardown(() => proxy.close());
  proxy.rewriteHeartbeat = (hb) => ({ ...hb, version_hash: v1.hash });
  proxy.rewriteManifest = (m) => (m.delta_endpoint ? { ...m, delta_endpoint: m.delta_endpoint.replace(v1.hash, damagedHash) } : m);
  proxy.rewritePath = (url) => url.replace(damagedHash, v1.hash);
  const device = await makeDevice(fixture, proxy.url, damaged);
  const run = await device.runOnce();
  expectExit(t, run, 1, 'the cycle ends in error');
  t.ok(failedWith(run, 'AGENT_RECONSTRUCTION_MISMATCH'), 'the reconstruction check failed');
  t.equal(proxy.downloads().length, 1, 'the delta was downloaded and applied');
  const names = await readdir(device.slotDir);
  t.notOk(names.includes('.pending_update'), 'no marker was written');
  t.notOk(names.includes('slot-b'), 'the wrong rebuild is removed');
  t.same(await device.current(), { slot: 'slot-a', hash: damagedHash }, 'current still names the running slot');
});

t.test('a download cut in the middle resumes from its offset', async (t) => {
  const proxy = await startProxy(server.url);
  t.teardown(() => proxy.close());
  const cutAt = 400_000;
  proxy.cutNextDownloadAfter = cutAt;
  const device = await makeDevice(fixture, proxy.url, strangerBytes);
  const run = await device.runOnce();
  expectExit(t, run);
  const downloads = proxy.downloads();
  t.equal(downloads.length, 2, 'one cut request and one resumed request');
  t.notOk(downloads[0]?.range, 'the first request starts at 0');
  const resumedFrom = Number(/^bytes=(\d+)-$/.exec(downloads[1]?.range ?? '')?.[1]);
  t.ok(resumedFrom > 0 && resumedFrom <= cutAt, `the second request resumes from byte ${resumedFrom}`);
  t.equal(proxy.downloadBytes, cutAt + fullManifest.delta_size - resumedFrom, 'only the missing bytes were fetched again');
  t.ok(logged(run, 'download interrupted; retrying'));
  t.same(await device.current(), { slot: 'slot-b', hash: v2.hash }, 'the resumed transfer installs v2');
});

t.test('a pending manifest (retry_after, no signature) leads to no download', async (t) => {
  const proxy = await startProxy(server.url);
  t.teardown(() => proxy.close());
  proxy.rewriteManifest = ({ signature: _s, delta_endpoint: _d, ...rest }) => ({ ...rest, retry_after: 7 });
  const device = await makeDevice(fixture, proxy.url, v1Bytes);
  const run = await device.runOnce();
  expectExit(t, run);
  t.ok(run.lines.some((l) => l.msg === 'update being prepared; heartbeat again later' && l.retryAfterSeconds === 7));
  t.equal(proxy.downloads().length, 0);
  t.same(await device.current(), { slot: 'slot-a', hash: v1.hash });
});

t.test('a health check failing three times rolls back, reports, and does not loop', async (t) => {
  const proxy = await startProxy(server.url);
  t.teardown(() => proxy.close());
  const device = await makeDevice(fixture, proxy.url, v1Bytes);
  expectExit(t, await device.runOnce());
  t.same(await device.current(), { slot: 'slot-b', hash: v2.hash }, 'v2 was installed');

  proxy.failHeartbeats = 3;
  const boot = await device.runOnce();
  expectExit(t, boot);
  t.equal(boot.lines.filter((l) => l.msg === 'health check failed').length, 3, 'three tries');
  t.same(await device.current(), { slot: 'slot-a', hash: v1.hash }, 'current is back on v1');
  const report = proxy.reports.at(-1);
  t.match(report, { success: false, previous_hash: v1.hash, new_hash: v2.hash, rollback_reason: /health check failed 3 times/ });
  t.notOk((await readdir(device.slotDir)).includes('.pending_update'));
  t.ok(logged(boot, 'this target was rolled back on this device before; not installing it again'));

  const again = await device.runOnce();
  expectExit(t, again);
  t.notOk(logged(again, 'new slot activated; restarting'), 'the rolled-back target is not installed again');
  t.same(await device.current(), { slot: 'slot-a', hash: v1.hash });
});

t.test('a failed restart swaps back, reports and arms a persisted cooldown', async (t) => {
  const device = await makeDevice(fixture, server.url, v1Bytes, { restart_command: 'echo no service >&2; exit 3' });
  const run = await device.runOnce();
  expectExit(t, run, 1, 'the cycle ends in error');
  t.ok(failedWith(run, 'AGENT_RESTART_FAILED'));
  t.same(await device.current(), { slot: 'slot-a', hash: v1.hash }, 'back on the old slot');
  const state = await device.readState();
  t.ok(state.cooldownUntil > Date.now() + 50 * 60_000, 'a cooldown of about an hour is persisted');
  const next = await device.runOnce();
  expectExit(t, next);
  t.ok(logged(next, 'restart cooldown active; no update this cycle'), 'the next start honours the cooldown');
  t.same(await device.current(), { slot: 'slot-a', hash: v1.hash });
});
