import { join } from 'node:path';
import t, { type Test } from 'tap';
import { decodeManifest, encodeManifest } from '../../src/shared/wire/cbor.js';
import type { ManifestWire } from '../../src/shared/wire/keys.js';
import { adminCall } from '../helpers/admin.js';
import { expectExit, makeDevice, runUntilRunning, type AgentRun } from '../helpers/agent.js';
import { startCoapRelay, type CoapRelay } from '../helpers/coap-relay.js';
import { firmware, freePort, makeFixture, nextVersion, randomHash } from '../helpers/fixture.js';
import { heartbeatUntilSigned } from '../helpers/http.js';
import { startProxy, type Proxy } from '../helpers/proxy.js';
import { cohortIds, deviceHeartbeat } from '../helpers/rollout.js';
import { startTestServer } from '../helpers/server.js';

// The attacker on the path, over real sockets and both transports: a proxy on 127.0.0.1
// between the real agent (`updater agent --once`) and the real server keeps answers and plays
// them back later. Each check of agent/release.ts stops one of these; an operator's own
// rollbacks still install.

const fixture = await makeFixture();
t.teardown(() => fixture.cleanup());
const v1Bytes = firmware(300_000, 'a1');
const v2Bytes = nextVersion(v1Bytes, 'a2');
const v3Bytes = nextVersion(v2Bytes, 'a3');
const v1 = await fixture.writeBinary('v1.bin', v1Bytes);
const v2 = await fixture.writeBinary('v2.bin', v2Bytes);
const v3 = await fixture.writeBinary('v3.bin', v3Bytes);
const coapPort = await freePort();
const TRACKS = { http: 'app-http', coap: 'app-coap' } as const;
const server = await startTestServer(fixture, [], {
  allow_full_download: true,
  listen: { coap: `127.0.0.1:${coapPort}` },
  store: { state_file: join(fixture.dir, 'state.json') },
  log_level: 'error',
});
t.teardown(() => server.stop());

async function publish(track: string, version: string, binary: string, rollout?: unknown): Promise<void> {
  const answer = await adminCall(server.url, 'POST', '/admin/artifacts', { name: track, version, binary, ...(rollout ? { rollout } : {}) });
  if (answer.status !== 200) throw new Error(`publish answered ${answer.status}: ${JSON.stringify(answer.json)}`);
}


/**
 * The signed answer a device of this id on `running` gets (it may take a moment to be ready). By
 * default, on an unknown build: the full-mode answer.
 */
async function signedAnswerFor(deviceId: string, track: string, running = randomHash(), deltaFormats?: string[]): Promise<ManifestWire> {
  for (let i = 0; i < 120; i++) {
    const { json } = await deviceHeartbeat(server.url, deviceId, running, track, deltaFormats);
    if (json.signature) return json;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('no signed answer');
}

/** The patch formats an agent asks for by default (agent/config-schema.ts). */
const AGENT_FORMATS = ['bsdiff-lzma', 'bsdiff40'];

/**
 * Has the server make the patch the agent is about to ask for: otherwise its first cycle is
 * only told to come back (retry_after), a whole agent process for nothing.
 */
async function patchReady(deviceId: string, track: string, running: string): Promise<void> {
  await signedAnswerFor(deviceId, track, running, AGENT_FORMATS);
}

function refusal(run: AgentRun): any {
  return run.lines.find((l) => l.code === 'RELEASE_REFUSED');
}

/** A man in the middle of one transport: replaces the next heartbeat answers with a JSON manifest of its choice. */
interface Attacker {
  readonly httpUrl: string;
  readonly overrides: Record<string, unknown>;
  replay(manifest: ManifestWire | undefined): void;
  downloads(): number;
}

async function attackerFor(t: Test, transport: 'http' | 'coap'): Promise<Attacker> {
  const proxy: Proxy = await startProxy(server.url);
  t.teardown(() => proxy.close());
  if (transport === 'http') {
    return {
      httpUrl: proxy.url, overrides: {},
      replay: (m) => { if (m) proxy.rewriteManifest = () => m; else delete proxy.rewriteManifest; },
      downloads: () => proxy.downloads().length,
    };
  }
  const relay: CoapRelay = await startCoapRelay(coapPort);
  t.teardown(() => relay.close());
  return {
    httpUrl: proxy.url, overrides: { primary: 'coap', coap_url: relay.url },
    replay: (m) => { if (m) relay.replaceHeartbeatAnswer = () => encodeManifest(m); else delete relay.replaceHeartbeatAnswer; },
    downloads: () => relay.paths.filter((p) => /^(delta|binary)\//.test(p)).length + proxy.downloads().length,
  };
}

for (const transport of ['http', 'coap'] as const) {
  const track = TRACKS[transport];
  t.test(`${transport}: replays, tampering, operator rollbacks and a rollout aborted with rollback`, async (t) => {
    await publish(track, '1.0.0', v1.path);
    // Anyone can capture a full-mode answer by heartbeating a hash the server does not know.
    const capturedV1 = await heartbeatUntilSigned(server.url, randomHash(), track);
    await publish(track, '2.0.0', v2.path);
    const attacker = await attackerFor(t, transport);
    const device = await makeDevice(fixture, attacker.httpUrl, v1Bytes, { artifact: track, ...attacker.overrides });
    await patchReady('device-0001', track, v1.hash);
    await runUntilRunning(t, device, v2.hash, 'v1 to v2');
    const onV2 = (await device.readState()).releaseSequence;
    t.ok(onV2 > capturedV1.release!.sequence, 'the sequence of v2 was recorded with the swap');

    await t.test('attack: a replayed older answer leaves the device on its newer build', async (t) => {
      attacker.replay(capturedV1);
      const before = attacker.downloads();
      const run = await device.runOnce();
      t.not(run.code, 0, '--once exits non-zero');
      t.match(refusal(run), { err: /release refused \(older\)/ }, 'logged RELEASE_REFUSED (older)');
      t.equal((await device.current()).hash, v2.hash, 'still on v2');
      t.equal(attacker.downloads(), before, 'nothing was downloaded');
      attacker.replay(undefined);
    });

    await t.test('attack: a statement changed on the way (a raised sequence) is refused as a bad signature', async (t) => {
      attacker.replay({ ...capturedV1, release: { ...capturedV1.release!, sequence: onV2 + 10 } });
      const run = await device.runOnce();
      t.not(run.code, 0);
      t.match(refusal(run), { err: /release refused \(signature\)/ });
      t.equal((await device.current()).hash, v2.hash);
      attacker.replay(undefined);
    });

    await t.test('an answer naming the build the device runs is not downloaded again', async (t) => {
      const full = await heartbeatUntilSigned(server.url, randomHash(), track);
      attacker.replay(full);
      const before = attacker.downloads();
      const run = await device.runOnce();
      expectExit(t, run, 0);
      t.equal(attacker.downloads(), before, 'no download');
      attacker.replay(undefined);
    });

    await t.test('an operator rollback (v1 published again) installs: it has a higher sequence', async (t) => {
      await publish(track, '1.0.1', v1.path);
      await patchReady('device-0001', track, v2.hash);
      await runUntilRunning(t, device, v1.hash, 'v2 back to v1');
      t.ok((await device.readState()).releaseSequence > onV2);
    });

    await t.test('abort with rollback installs the stable build on the devices that took the aborted target', async (t) => {
      await publish(track, '3.0.0', v3.path, { steps: [50, 100], step_interval: '1h', max_failure_rate: 0.5, min_reports: 100 });
      const inside = cohortIds(v3.hash, 50, true, 1, `${transport}-in`)[0]!;
      const taker = await makeDevice(fixture, attacker.httpUrl, v1Bytes, { artifact: track, device_id: inside, ...attacker.overrides });
      await patchReady(inside, track, v1.hash);
      await runUntilRunning(t, taker, v3.hash, 'the cohort device takes v3');
      const capturedV3 = await signedAnswerFor(inside, track);
      t.equal((await adminCall(server.url, 'POST', '/admin/rollout', { artifact: track, action: 'abort', rollback: true })).status, 200);
      await patchReady(inside, track, v3.hash);
      await runUntilRunning(t, taker, v1.hash, 'the rollback');
      // The aborted target's answer, replayed, no longer takes it forward again.
      t.equal(capturedV3.target_hash, v3.hash);
      attacker.replay(capturedV3);
      const run = await taker.runOnce();
      t.equal((await taker.current()).hash, v1.hash, 'stays on the stable build');
      t.match(refusal(run), { err: /release refused \(older\)/ });
      attacker.replay(undefined);
    });
  });
}

// Mix-and-match (Uptane's term): a device configured without `artifact` follows the server's
// default track. An attacker who replays another track's validly signed, newer release must not
// move it there: the device remembers the track of the first statement it verified.
for (const transport of ['http', 'coap'] as const) {
  t.test(`${transport}: attack: another track's validly signed release is refused by a device without artifact`, async (t) => {
    const home = `home-${transport}`;
    const other = `other-${transport}`;
    await publish(home, '1.0.0', v1.path);
    t.equal((await adminCall(server.url, 'POST', '/admin/default', { artifact: home })).status, 200);
    const attacker = await attackerFor(t, transport);
    const device = await makeDevice(fixture, attacker.httpUrl, v1Bytes, { artifact: undefined, ...attacker.overrides });
    expectExit(t, await device.runOnce(), 0, 'a first, up-to-date cycle on the default track');
    t.equal((await device.readState()).track, home, 'the device remembers the track it follows');
    await publish(other, '9.0.0', v2.path);
    const foreign = await heartbeatUntilSigned(server.url, randomHash(), other);
    t.equal(foreign.artifact, other, 'a genuine, signed full-mode answer of the other track');
    attacker.replay(foreign);
    const before = attacker.downloads();
    const run = await device.runOnce();
    t.not(run.code, 0, '--once exits non-zero');
    t.match(refusal(run), { err: new RegExp(`release refused \\(signature\\): the statement is for the track ${other}, not ${home}`) });
    t.equal((await device.current()).hash, v1.hash, 'still on v1');
    t.equal(attacker.downloads(), before, 'nothing was downloaded');
    attacker.replay(undefined);
  });
}

t.test('the wire: a statement survives the CBOR round trip byte for byte', async (t) => {
  const manifest = await heartbeatUntilSigned(server.url, randomHash(), TRACKS.http);
  t.same(decodeManifest(encodeManifest(manifest)).release, manifest.release);
});
