import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { makeFixture } from '../helpers/fixture.js';
import { REPO_ROOT } from '../helpers/server.js';
import { needs } from '../helpers/system-tools.js';

// systemd's own checker reads the unit we ship (.ci/run installs it with the systemd package).
t.test('systemd-analyze verify accepts deploy/updater.service', needs('systemd-analyze'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const unit = await readFile(join(REPO_ROOT, 'deploy', 'updater.service'), 'utf8');
  t.match(unit, /^ExecStart=\/usr\/bin\/node /m, 'the unit runs node from /usr/bin, as the README installs it');
  // verify also checks that ExecStart's program exists: point it at this machine's node,
  // which may live elsewhere (a CI image, nvm), and check everything else as shipped.
  const local = join(fixture.dir, 'updater.service');
  await writeFile(local, unit.replace(/^ExecStart=\/usr\/bin\/node /m, `ExecStart=${process.execPath} `));
  const check = spawnSync('systemd-analyze', ['verify', local], { encoding: 'utf8' });
  t.equal(check.status, 0, `systemd-analyze verify exits 0${check.status === 0 ? '' : `:\n${check.stdout}${check.stderr}`}`);
  t.equal(`${check.stdout}${check.stderr}`.trim(), '', 'with nothing to say');
});
