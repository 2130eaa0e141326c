import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { validateConfig } from '../../src/shared/config/load.js';
import { NGINX } from '../helpers/cluster.js';
import { makeFixture } from '../helpers/fixture.js';
import { REPO_ROOT } from '../helpers/server.js';
import { needs } from '../helpers/system-tools.js';

// The cluster examples of deploy/ are what docs/scaling.md tells operators to install: each
// is checked by the tool that will read it.

const deploy = join(REPO_ROOT, 'deploy');

t.test('deploy/nginx-cluster.conf passes nginx -t (HTTP and the UDP stream for CoAP)', needs('nginx', 'nginx-stream'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  // The same file with its pid and log paths moved into a temp prefix.
  const text = (await readFile(join(deploy, 'nginx-cluster.conf'), 'utf8'))
    .replace(/\/run\/nginx-updater\.pid/, join(fixture.dir, 'nginx.pid'))
    .replace(/\/var\/log\/nginx\//g, `${fixture.dir}/`);
  t.match(text, /listen 5683 udp;/, 'CoAP goes through the stream module');
  const conf = join(fixture.dir, 'nginx.conf');
  await writeFile(conf, text);
  const check = spawnSync(NGINX, ['-t', '-p', fixture.dir, '-c', conf, '-e', join(fixture.dir, 'error.log')], { encoding: 'utf8' });
  t.equal(check.status, 0, check.stderr);
  t.match(check.stderr, /syntax is ok/);
});

t.test('deploy/updater@.service passes systemd-analyze verify', needs('systemd-analyze'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  await mkdir(join(fixture.dir, 'units'));
  const unit = join(fixture.dir, 'units', 'updater@1.service');
  await copyFile(join(deploy, 'updater@.service'), unit);
  const text = await readFile(unit, 'utf8');
  t.match(text, /--config \/etc\/updater\/replica-%i\.yaml/, 'one configuration per instance');
  // verify checks that ExecStart's program exists: point it at this machine's node.
  await writeFile(unit, text.replace('/usr/bin/node', process.execPath));
  const verify = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
  t.equal(verify.status, 0, verify.stderr);
});

t.test('deploy/replica.yaml is a valid cluster configuration', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const doc = parse(await readFile(join(deploy, 'replica.yaml'), 'utf8')) as Record<string, any>;
  // The files it names live on a production host; the fixture's stand in for them.
  doc.signing.private_key_file = fixture.keyPath;
  doc.admin.token_file = fixture.tokenPath;
  doc.artifacts = [];
  const config = validateConfig(doc, join(fixture.dir, 'replica.yaml'));
  t.match(config.database, /^postgres:\/\//);
  t.equal(config.store.stateFile, undefined, 'no state file in a cluster');
  t.throws(() => validateConfig({ ...doc, store: { ...doc.store, state_file: './state.json' } }, join(fixture.dir, 'r.yaml')),
    /^store\.state_file must not be set with a postgres:\/\/ database/, 'a state file beside a postgres:// database is refused');
});
