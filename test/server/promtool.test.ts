import { spawnSync } from 'node:child_process';
import t from 'tap';
import { firmware, makeFixture, sha256Hex } from '../helpers/fixture.js';
import { getBytes, heartbeatUntilSigned } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';
import { needs } from '../helpers/system-tools.js';

// Prometheus' own linter reads the /metrics page after some traffic (.ci/run installs it).
t.test('the /metrics page passes promtool check metrics', needs('promtool'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v2 = await fixture.writeBinary('v2.bin', firmware(50_000, 'prom'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '2', binary: v2.path }], { allow_full_download: true });
  t.teardown(() => server.stop());
  const manifest = await heartbeatUntilSigned(server.url, sha256Hex(Buffer.from('stranger')));
  await getBytes(`${server.url}${manifest.binary_endpoint}`);
  await getBytes(`${server.url}/nothing-here`);
  await fetch(`${server.url}/report`, { method: 'POST', body: '{' });

  const page = (await getBytes(`${server.url}/metrics`)).body.toString();
  t.match(page, /updater_nodejs_active_handles /, 'the default Node gauges are there, without _total');
  const check = spawnSync('promtool', ['check', 'metrics'], { input: page, encoding: 'utf8' });
  t.equal(check.status, 0, `promtool exits 0${check.status === 0 ? '' : `:\n${check.stdout}${check.stderr}`}`);
  t.equal(`${check.stdout}${check.stderr}`.trim(), '', 'and finds nothing to say');
});
