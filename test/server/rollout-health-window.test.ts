import { readFile } from 'node:fs/promises';
import t from 'tap';
import { adminCall, eventually, trackOf } from '../helpers/admin.js';
import { firmware, makeFixture, nextVersion } from '../helpers/fixture.js';
import { postJson } from '../helpers/http.js';
import { cohortIds, deviceHeartbeat } from '../helpers/rollout.js';
import { startTestServer } from '../helpers/server.js';

// A rollout's health counts every report received after its start or resume, to the
// millisecond. With whole seconds, the window began at the next second: 20 failure reports
// sent right after a publish counted as none, and the rollout never paused.

const failure = (url: string, device: string, from: string, target: string) => postJson(`${url}/report`, {
  device_id: device, previous_hash: from, new_hash: target, success: false,
  rollback_reason: 'boot health check failed', timestamp: Math.floor(Date.now() / 1000),
});

/** Only devices offered the target count toward its health: `count` of the cohort check in on `from` first. */
async function offered(url: string, from: string, target: string, prefix: string, count: number): Promise<string[]> {
  const ids = cohortIds(target, 10, true, count, prefix);
  await Promise.all(ids.map((id) => deviceHeartbeat(url, id, from, 'app')));
  return ids;
}

/** Waits until the clock is early in a second, so what follows falls in the same second. */
async function earlyInASecond(): Promise<void> {
  while (Date.now() % 1000 > 50) await new Promise((r) => setTimeout(r, 5));
}

t.test('reports received right after a rollout starts or resumes are counted', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(20_000, 'hw-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'hw-v2'));
  const server = await startTestServer(fixture, [], { fleet: { flush_interval: '50ms' } });
  t.teardown(() => server.stop());
  t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version: '1', binary: v1.path })).status, 200);
  // v2 is stored beforehand, so the publish with a rollout is quick.
  t.equal((await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'warm', version: '2', binary: v2.path })).status, 200);

  // min_reports above what is sent: the counts are watched, the rollout never pauses itself.
  const rollout = { steps: [10, 100], step_interval: '1h', max_failure_rate: 0.5, min_reports: 1000 };
  await earlyInASecond();
  const published = await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version: '2', binary: v2.path, rollout });
  t.equal(published.status, 200);
  const starters = await offered(server.url, v1.hash, v2.hash, 'start', 20);
  const answers = await Promise.all(starters.map((id) => failure(server.url, id, v1.hash, v2.hash)));
  t.ok(answers.every((a) => a.status === 204), 'every report accepted');
  const started = await eventually('the 20 reports are counted', async () => (await trackOf(server.url, 'app')).rollout, (r) => r.reports.failure === 20, 10_000);
  t.same(started.reports, { success: 0, failure: 20 }, 'every report since the start');

  const pausers = await offered(server.url, v1.hash, v2.hash, 'paused', 5);
  t.equal((await adminCall(server.url, 'POST', '/admin/rollout', { artifact: 'app', action: 'pause' })).status, 200);
  // Reports received while paused, just before the resume, do not count after it.
  await earlyInASecond();
  await Promise.all(pausers.map((id) => failure(server.url, id, v1.hash, v2.hash)));
  const resumed = await adminCall(server.url, 'POST', '/admin/rollout', { artifact: 'app', action: 'resume' });
  t.match(resumed.json, { state: 'running', reports: { success: 0, failure: 0 } });
  const resumers = await offered(server.url, v1.hash, v2.hash, 'resume', 20);
  await Promise.all(resumers.map((id) => failure(server.url, id, v1.hash, v2.hash)));
  const after = await eventually('the 20 reports after the resume are counted', async () => (await trackOf(server.url, 'app')).rollout, (r) => r.reports.failure >= 20, 10_000);
  t.same(after.reports, { success: 0, failure: 20 }, 'those after the resume, and not the 5 before it');
});
