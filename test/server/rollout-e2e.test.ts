import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { inCohort } from '../../src/shared/decision/cohort.js';
import { sha256 } from '../../src/shared/hash.js';
import { verifyManifest } from '../../src/shared/signing.js';
import { adminCall, eventually, trackOf } from '../helpers/admin.js';
import { firmware, makeFixture, nextVersion } from '../helpers/fixture.js';
import { getBytes, heartbeatUntilSigned, postJson } from '../helpers/http.js';
import { deviceHeartbeat } from '../helpers/rollout.js';
import { startTestServer, type ArtifactEntry, type TestServer } from '../helpers/server.js';

// The whole story of a staged rollout with 200 simulated devices over HTTP: 10 % of the fleet
// takes the new build, too many of them fail and report it, the rollout pauses itself (and
// stays paused across a restart), the operator fixes the cause and resumes, the timer takes
// it to 100 %, and at the end every device runs the new build.
//
// A simulated device does what the agent does, minus the bytes on its disk: heartbeat,
// verify the signature, download, check the transfer hash, then "boot" the new build and
// report. The devices of the failing share report success: false with a rollback reason and
// stay where they were, until the test says the cause is fixed.

const DEVICES = 200;
const ARTIFACT = 'app';
const STEP_INTERVAL = '20s';
// While nothing the test can see has changed, a round of the fleet runs at most this often: it
// only covers a change the rollout view does not show (a front-end still deciding by the
// previous state), so rounds are not repeated every 100 ms through the 20 s step timer.
const ROUND_EVERY_MS = 5_000;

interface SimDevice {
  readonly id: string;
  version: string;
  readonly failing: boolean;
}

// A fixed 20 s step plus a few rounds of 200 devices: on a loaded machine that outlasts the
// suite's default per-file timeout.
t.setTimeout(600_000);

t.test('200 devices: a rollout pauses itself on failures, resumes after a fix and completes', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(40_000, 'e2e-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'e2e-v2'));
  // `warm` exists only to have the delta v1 → v2 generated before the rollout starts, so the
  // first cohort can report well before a step is due however loaded the machine is. Both are
  // published through the API: a configured track refuses API publishes (TRACK_CONFIGURED).
  const artifacts: ArtifactEntry[] = [];
  const overrides = {
    store: { full_compression_level: 1, state_file: join(fixture.dir, 'state.json') },
    fleet: { flush_interval: '200ms' },
  };
  let server: TestServer = await startTestServer(fixture, artifacts, overrides);
  t.teardown(() => server.stop());
  t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: ARTIFACT, version: '1.0.0', binary: v1.path })).status, 200);
  t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'warm', version: '1.0.0', binary: v1.path })).status, 200);
  t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'warm', version: '2.0.0', binary: v2.path })).status, 200);
  await heartbeatUntilSigned(server.url, v1.hash, 'warm');

  // 40 % of the fleet fails the new build: far above the 20 % the rollout tolerates.
  const devices: SimDevice[] = Array.from({ length: DEVICES }, (_, i) => ({ id: `e2e-${i.toString().padStart(3, '0')}`, version: v1.hash, failing: i % 5 < 2 }));
  let fixed = false;
  const round = () => runRound(server.url, devices, fixture.publicKey, () => fixed);
  const onV2 = () => devices.filter((d) => d.version === v2.hash);
  // A probe for `eventually`: the rollout as the server shows it, after a round of the fleet
  // when a round can change something (the first; after one that moved devices; once the
  // rollout's state or percent moved; every ROUND_EVERY_MS at the least). Each wait gets its own.
  const pacedRounds = () => {
    let last: { atMs: number; seen: string; moved: boolean } | undefined;
    return async (): Promise<any> => {
      const before = (await trackOf(server.url, ARTIFACT)).rollout;
      const seen = `${before.state} ${before.percent}`;
      if (last && !last.moved && last.seen === seen && Date.now() - last.atMs < ROUND_EVERY_MS) return before;
      const moving = onV2().length;
      await round();
      last = { atMs: Date.now(), seen, moved: onV2().length !== moving };
      return (await trackOf(server.url, ARTIFACT)).rollout;
    };
  };

  const published = await adminCall(server.url, 'POST', '/admin/artifacts', {
    name: ARTIFACT, version: '2.0.0', binary: v2.path,
    rollout: { steps: [10, 100], step_interval: STEP_INTERVAL, max_failure_rate: 0.2, min_reports: 5 },
  });
  t.equal(published.status, 200);
  t.match(published.json.rollout, { percent: 10, state: 'running', stable_hash: v1.hash });
  const cohort = devices.filter((d) => inCohort(d.id, v2.hash, 10));
  t.ok(cohort.length >= 10 && cohort.length <= 35, `about 10 % of the fleet is in the first cohort (${cohort.length})`);
  t.ok(cohort.filter((d) => d.failing).length / cohort.length > 0.2, 'and more of it fails than the rollout tolerates');

  const paused = await eventually('the rollout pauses itself', pacedRounds(), (r) => r.state !== 'running', 60_000);
  t.match(paused, { state: 'paused', paused_reason: 'failure_rate', percent: 10 }, 'paused by the failure rate, before any step');
  t.ok(paused.reports.failure / (paused.reports.success + paused.reports.failure) > 0.2, `the counts show why (${JSON.stringify(paused.reports)})`);
  t.ok(onV2().every((d) => cohort.includes(d)), 'only devices of the cohort took the new build');
  t.ok(onV2().every((d) => !d.failing), 'and only those that passed their boot check run it');

  await t.test('while paused, no one new is offered the build, and the state survives a restart', async (t) => {
    await round();
    t.ok(onV2().every((d) => cohort.includes(d)), 'no device outside the cohort moved');
    await server.stop();
    server = await startTestServer(fixture, artifacts, overrides);
    t.match((await trackOf(server.url, ARTIFACT)).rollout, { state: 'paused', paused_reason: 'failure_rate', percent: 10, target_hash: v2.hash });
    const failed = cohort.find((d) => d.failing && d.version === v1.hash)!;
    t.match((await deviceHeartbeat(server.url, failed.id, v1.hash, ARTIFACT)).json, { update_available: false, target_hash: v1.hash }, 'a failed device of the cohort is held on the stable target');
    const fleet = await adminCall(server.url, 'GET', `/admin/fleet?artifact=${ARTIFACT}`);
    t.equal(fleet.status, 200);
    t.match(fleet.json.rollout, { state: 'paused', target_hash: v2.hash }, 'GET /admin/fleet shows the rollout');
    t.ok(fleet.json.reports_24h.failure > 0, 'and the failure reports');
  });

  // The cause is found and fixed (say, a device-side configuration): failing devices now boot the build.
  fixed = true;
  const resumed = await adminCall(server.url, 'POST', '/admin/rollout', { artifact: ARTIFACT, action: 'resume' });
  t.match(resumed.json, { state: 'running', reports: { success: 0, failure: 0 } }, 'a resume starts counting afresh');

  const untilDone = pacedRounds();
  const done = await eventually('every device runs the new build', async () => {
    const rollout = await untilDone();
    return { onV2: onV2().length, rollout };
  }, (s) => s.onV2 === DEVICES, 180_000);
  t.match(done.rollout, { state: 'complete', percent: 100, stable_hash: v2.hash }, 'the timer took it to 100 % and completed it');
  t.equal(done.rollout.paused_reason, null, 'the failures before the resume did not pause it again');
  const health = JSON.parse((await getBytes(`${server.url}/health`)).body.toString());
  t.equal(health.artifacts[ARTIFACT].hash, v2.hash);
});

/** One heartbeat cycle of every device, 20 at a time. */
async function runRound(url: string, devices: SimDevice[], publicKey: string, isFixed: () => boolean): Promise<void> {
  const queue = [...devices];
  const worker = async () => {
    for (let device = queue.shift(); device; device = queue.shift()) await cycle(url, device, publicKey, isFixed());
  };
  await Promise.all(Array.from({ length: 20 }, worker));
}

async function cycle(url: string, device: SimDevice, publicKey: string, fixed: boolean): Promise<void> {
  const { status, json: m } = await deviceHeartbeat(url, device.id, device.version, ARTIFACT);
  if (status !== 200) throw new Error(`heartbeat of ${device.id} answered ${status}: ${JSON.stringify(m)}`);
  if (!m.update_available || !m.signature) return;
  if (!verifyManifest(publicKey, m.target_hash, m.delta_hash, m.signature)) throw new Error(`bad signature for ${device.id}`);
  const transfer = await getBytes(`${url}${m.delta_endpoint ?? m.binary_endpoint}`);
  if (transfer.status !== 200 || sha256(transfer.body) !== m.delta_hash) throw new Error(`bad transfer for ${device.id}`);
  const success = !device.failing || fixed;
  const report = await postJson(`${url}/report`, {
    device_id: device.id, previous_hash: device.version, new_hash: m.target_hash, success,
    rollback_reason: success ? '' : 'boot health check failed 3 times', timestamp: Math.floor(Date.now() / 1000),
  });
  if (report.status !== 204) throw new Error(`report of ${device.id} answered ${report.status}`);
  if (success) device.version = m.target_hash;
}
