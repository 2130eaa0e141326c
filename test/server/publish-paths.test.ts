import { mkdir, readFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { adminCall } from '../helpers/admin.js';
import { firmware, makeFixture, sha256Hex } from '../helpers/fixture.js';
import { getBytes } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';

// A published file is downloadable by anyone: the admin API may read only below
// store.publish_roots (or a configured artifact's directory), never the server's own files.
// Hard links to those files (refused by device and inode) are among the hostile-input cases of
// test/server/http-input.test.ts; the store-keeper's recheck of the file it opened is
// test/actors/store-keeper/source-file.test.ts.

t.test('publishes are confined to store.publish_roots and never reach the server\'s own files', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const builds = join(fixture.dir, 'builds');
  await mkdir(builds);
  const ok = await fixture.writeBinary('builds/app.bin', firmware(20_000, 'pp-app'));
  const elsewhere = await fixture.writeBinary('elsewhere.bin', firmware(20_000, 'pp-else'));
  await symlink('/etc/passwd', join(builds, 'passwd-link'));
  await symlink(fixture.keyPath, join(builds, 'key-link'));
  await symlink(ok.path, join(builds, 'good-link'));
  const statePath = join(builds, 'state.json');
  const server = await startTestServer(fixture, [], { store: { dir: join(builds, 'store'), state_file: statePath, publish_roots: [builds, fixture.keyPath] } });
  t.teardown(() => server.stop());
  const publish = (binary: string) => adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version: '1', binary });

  const refused: [string, string][] = [
    ['the signing key (even when listed as a root)', fixture.keyPath],
    ['a symlink to the signing key', join(builds, 'key-link')],
    ['the admin token file', fixture.tokenPath],
    ['the configuration file', server.configPath],
    ['/etc/shadow', '/etc/shadow'],
    ['a symlink inside a root to /etc/passwd', join(builds, 'passwd-link')],
    ['a file outside every root', elsewhere.path],
    ['a path climbing out of a root', join(builds, '..', 'elsewhere.bin')],
  ];
  for (const [why, path] of refused) {
    const answer = await publish(path);
    t.equal(answer.status, 403, why);
    t.equal(answer.json?.error?.code, 'PUBLISH_PATH_FORBIDDEN', why);
  }
  t.equal((await getBytes(`${server.url}/binary/${sha256Hex(await readFile(fixture.keyPath))}`)).status, 404, 'the key is not downloadable');

  const published = await publish(ok.path);
  t.equal(published.status, 200, 'a file below a root is published');
  const stateAnswer = await publish(statePath);
  t.equal(stateAnswer.json?.error?.code, 'PUBLISH_PATH_FORBIDDEN', 'the state file, though below a root');
  const stored = join(builds, 'store', 'binaries', `${ok.hash}.bin`);
  t.equal((await publish(stored)).json?.error?.code, 'PUBLISH_PATH_FORBIDDEN', 'a file inside store.dir');
  const linked = await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'linked', version: '1', binary: join(builds, 'good-link') });
  t.equal(linked.status, 200, 'a symlink that stays inside a root is followed');
});
