import { readdir } from 'node:fs/promises';
import t from 'tap';
import { signManifest, readPrivateKeyFile } from '../../src/shared/signing.js';
import { expectExit, makeDevice, runUntilRunning, startUpdateWorld, type AgentRun } from '../helpers/agent.js';
import { sha256Hex } from '../helpers/fixture.js';
import { getBytes } from '../helpers/http.js';
import { startProxy } from '../helpers/proxy.js';

// The agent and the bsdiff-lzma patch format end to end against the real server: by default
// the agent names [bsdiff-lzma, bsdiff40] and updates through bsdiff-lzma over HTTP and over
// CoAP; `delta_formats: [bsdiff40]` restricts it to BSDIFF40; a corrupt bsdiff-lzma patch
// that still carries a valid signature (re-signed here with the server's key) is refused
// with the code a corrupt BSDIFF40 patch gets, before anything is swapped.

const world = await startUpdateWorld(t, 300_000, { coap: true });
const lzmaPath = `/delta/${world.v1Hash}/${world.v2Hash}/bsdiff-lzma`;

function failedWith(run: AgentRun, code: string): boolean {
  return run.lines.some((l) => l.msg === 'update cycle failed' && l.code === code);
}

/** The patch format of each delta the run was offered, from its 'update available' lines. */
function formatsOffered(run: AgentRun): string[] {
  return run.lines.filter((l) => l.msg === 'update available' && l.mode === 'delta').map((l) => l.format as string);
}

t.test('over HTTP the agent asks for bsdiff-lzma by default and updates through it', async (t) => {
  const proxy = await startProxy(world.server.url);
  t.teardown(() => proxy.close());
  const device = await makeDevice(world.fixture, proxy.url, world.v1Bytes);
  await runUntilRunning(t, device, world.v2Hash, 'HTTP');
  const heartbeat = proxy.requests.find((r) => r.url === '/heartbeat');
  t.ok(heartbeat, 'the agent sent heartbeats');
  t.same(proxy.downloads().map((d) => d.url), [lzmaPath], 'the one download is the bsdiff-lzma delta');
  t.notOk((await readdir(device.slotDir)).includes('.patch'), 'no decompressed patch file: the transfer is applied as it is');
});

t.test('over CoAP the agent updates through bsdiff-lzma too', async (t) => {
  const device = await makeDevice(world.fixture, 'unused', world.v1Bytes, { http_url: undefined, coap_url: world.coapUrl, primary: 'coap' });
  const run = await device.runOnce();
  expectExit(t, run);
  t.same(formatsOffered(run), ['bsdiff-lzma'], 'the CoAP manifest named bsdiff-lzma and the agent took it');
  await runUntilRunning(t, device, world.v2Hash, 'CoAP');
  t.same(await device.current(), { slot: 'slot-b', hash: world.v2Hash });
});

t.test('delta_formats: [bsdiff40] restricts the agent to BSDIFF40', async (t) => {
  const proxy = await startProxy(world.server.url);
  t.teardown(() => proxy.close());
  const device = await makeDevice(world.fixture, proxy.url, world.v1Bytes, { delta_formats: ['bsdiff40'] });
  await runUntilRunning(t, device, world.v2Hash, 'bsdiff40 only');
  t.same(proxy.downloads().map((d) => d.url), [`/delta/${world.v1Hash}/${world.v2Hash}`], 'the BSDIFF40 delta was downloaded');
});

t.test('a corrupt bsdiff-lzma patch with a valid signature is refused before the swap', async (t) => {
  const genuine = (await getBytes(`${world.server.url}${lzmaPath}`)).body;
  t.equal(genuine.subarray(0, 8).toString('latin1'), 'BSDLZMA1');
  // A byte inside the second (difference) stream: the header still adds up.
  const at = 40 + Number(genuine.readBigUInt64LE(16)) + 30;
  const corrupt = Buffer.from(genuine);
  corrupt[at] = corrupt[at]! ^ 0xff;
  const key = await readPrivateKeyFile(world.fixture.keyPath);
  const proxy = await startProxy(world.server.url);
  t.teardown(() => proxy.close());
  proxy.corruptDownloadAt = at;
  proxy.rewriteManifest = (m) => (m.delta_format === 'bsdiff-lzma'
    ? { ...m, delta_hash: sha256Hex(corrupt), signature: signManifest(key, m.target_hash, sha256Hex(corrupt)) }
    : m);
  const device = await makeDevice(world.fixture, proxy.url, world.v1Bytes);
  const run = await device.runOnce();
  expectExit(t, run, 1, 'the cycle ends in error');
  t.ok(failedWith(run, 'AGENT_RECONSTRUCTION_MISMATCH'), 'refused as a corrupt BSDIFF40 patch is');
  t.same(proxy.downloads().map((d) => d.url), [lzmaPath], 'the corrupt patch passed the transfer hash check');
  const names = await readdir(device.slotDir);
  t.notOk(names.includes('.pending_update'), 'no marker was written');
  t.notOk(names.includes('slot-b'), 'the partial rebuild is removed');
  t.notOk(names.includes('.download.part'), 'the transfer that cannot apply is discarded');
  t.same(await device.current(), { slot: 'slot-a', hash: world.v1Hash }, 'current still names the running slot');
});
