import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { adminCall, eventually, trackOf } from '../helpers/admin.js';
import { firmware, makeFixture, nextVersion, randomHash } from '../helpers/fixture.js';
import { cohortIds, deviceHeartbeat } from '../helpers/rollout.js';
import { startTestServer, type ArtifactEntry } from '../helpers/server.js';

// Rollouts across restarts: an API track's rollout comes back exactly as it was (state,
// percent, stable target, the time of its next step) and goes on on its timer; a track the
// configuration names (since) is republished from its file at boot, and a rollout of another
// file is replaced.

t.test('an API track keeps its rollout across a restart and completes on its timer', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const base = await fixture.writeBinary('base.bin', firmware(10_000, 'rr-base'));
  const a1 = await fixture.writeBinary('a1.bin', firmware(20_000, 'rr-a1'));
  const a2 = await fixture.writeBinary('a2.bin', nextVersion(await readFile(a1.path), 'rr-a2'));
  const config: ArtifactEntry[] = [{ name: 'base', version: '1', binary: base.path }];
  const overrides = { store: { full_compression_level: 1, state_file: join(fixture.dir, 'state.json') } };
  const key = 'fw/linux/arm64';
  const first = await startTestServer(fixture, config, overrides);
  const url1 = first.url;
  const started = await adminCall(url1, 'POST', '/admin/artifacts', { name: 'fw', os: 'linux', arch: 'arm64', version: '1', binary: a1.path, rollout: { steps: [20, 100], step_interval: '1h' } });
  t.match(started.json.rollout, { stable_hash: null, state: 'running', percent: 20 }, 'the first target of a track has no stable target');
  const [out] = cohortIds(a1.hash, 20, false, 1);
  t.match((await deviceHeartbeat(url1, out!, randomHash(), key)).json, { update_available: false }, 'outside the cohort with no stable target: no update');
  t.equal((await adminCall(url1, 'POST', '/admin/rollout', { artifact: key, action: 'complete' })).status, 200);
  const second = await adminCall(url1, 'POST', '/admin/artifacts', { name: 'fw', os: 'linux', arch: 'arm64', version: '2', binary: a2.path, rollout: { steps: [30, 60, 100], step_interval: '2s', max_failure_rate: 0.5, min_reports: 3 } });
  t.match(second.json.rollout, { stable_hash: a1.hash, state: 'running', percent: 30 });
  const paused = await adminCall(url1, 'POST', '/admin/rollout', { artifact: key, action: 'pause' });
  await first.stop();

  const again = await startTestServer(fixture, config, overrides);
  t.teardown(() => again.stop());
  const url = again.url;
  t.same((await trackOf(url, key)).rollout, paused.json, 'the rollout is back exactly as it was');
  const [mid] = cohortIds(a2.hash, 30, true, 1);
  t.match((await deviceHeartbeat(url, mid!, a1.hash, key)).json, { update_available: false, target_hash: a1.hash }, 'still paused after the restart');
  t.equal((await adminCall(url, 'POST', '/admin/rollout', { artifact: key, action: 'resume' })).status, 200);
  const seen: number[] = [];
  const done = await eventually('the rollout steps to completion', async () => {
    const r = (await trackOf(url, key)).rollout;
    if (seen[seen.length - 1] !== r.percent) seen.push(r.percent);
    return r;
  }, (r) => r.state === 'complete', 60_000);
  t.match(done, { percent: 100, stable_hash: a2.hash, next_step_at: null });
  t.same(seen.filter((p) => p > 30), seen.includes(60) ? [60, 100] : [100], 'it went through its steps in order');
  const [late] = cohortIds(a2.hash, 30, false, 1);
  t.match((await deviceHeartbeat(url, late!, a1.hash, key)).json, { update_available: true, target_hash: a2.hash }, 'complete: everyone is offered the target');
});

t.test('configuration wins at boot: a configured track is republished from its file', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(20_000, 'rc-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'rc-v2'));
  const overrides = { store: { full_compression_level: 1, state_file: join(fixture.dir, 'state.json') } };
  // The API refuses to publish onto a configured track (TRACK_CONFIGURED): the rollout starts on
  // an API track, which the configuration then names (or a state file from before that rule).
  const first = await startTestServer(fixture, [], overrides);
  t.equal((await adminCall(first.url, 'POST', '/admin/artifacts', { name: 'app', version: '1.0.0', binary: v1.path })).status, 200);
  t.equal((await adminCall(first.url, 'POST', '/admin/artifacts', { name: 'app', version: '2.0.0', binary: v2.path, rollout: { steps: [25, 100] } })).status, 200);
  await first.stop();

  const same = await startTestServer(fixture, [{ name: 'app', version: '2.0.0', binary: v2.path }], overrides);
  t.match(await trackOf(same.url, 'app'), { hash: v2.hash, rollout: { state: 'running', percent: 25, stable_hash: v1.hash } }, 'configuration naming the target under rollout: the rollout goes on');
  await same.stop();

  const other = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: v1.path }], overrides);
  t.teardown(() => other.stop());
  t.match(await trackOf(other.url, 'app'), { hash: v1.hash, rollout: null }, 'configuration naming another file: that target goes to everyone');
});
