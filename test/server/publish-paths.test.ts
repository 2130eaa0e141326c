import { link, mkdir, readdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { firmware, makeFixture, randomHash, sha256Hex } from '../helpers/fixture.js';
import { getBytes, heartbeat, heartbeatUntilSigned } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';
import { readFile } from 'node:fs/promises';

// A published file is downloadable by anyone: the admin API may read only below
// store.publish_roots (or a configured artifact's directory), never the server's own files.

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

t.test('a hard link inside a publish root to one of the server\'s own files is refused', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  // One file system: the fixture's directory holds the key, the roots and the store.
  const builds = join(fixture.dir, 'builds');
  await mkdir(builds);
  const storeDir = join(fixture.dir, 'store');
  const statePath = join(fixture.dir, 'state.json');
  const app = await fixture.writeBinary('builds/app.bin', firmware(20_000, 'hl-app'));
  const server = await startTestServer(fixture, [], { allow_full_download: true, store: { dir: storeDir, state_file: statePath, publish_roots: [builds] } });
  t.teardown(() => server.stop());
  const publish = (binary: string) => adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version: '1', binary });
  t.equal((await publish(app.path)).status, 200, 'a file built into the root is published (the state file now exists)');
  // The fleet actor holds its SQLite database open in WAL mode: the write-ahead log exists.
  await eventually('the database has a write-ahead log', () => readdir(storeDir), (names) => names.includes('updater.db-wal'));

  const targets: [string, string][] = [
    ['the signing key', fixture.keyPath],
    ['the admin token file', fixture.tokenPath],
    ['the configuration file', server.configPath],
    ['the state file', statePath],
    ['the database', join(storeDir, 'updater.db')],
    ['the database\'s write-ahead log', join(storeDir, 'updater.db-wal')],
    ['a stored binary', join(storeDir, 'binaries', `${app.hash}.bin`)],
  ];
  for (const [i, [what, target]] of targets.entries()) {
    const hardLink = join(builds, `hardlink-${i}`);
    await link(target, hardLink);
    // A track of its own each, so that a file wrongly published stays a track's target.
    const answer = await adminCall(server.url, 'POST', '/admin/artifacts', { name: `leak-${i}`, version: '1', binary: hardLink });
    t.equal(answer.status, 403, `a hard link to ${what}`);
    t.equal(answer.json?.error?.code, 'PUBLISH_PATH_FORBIDDEN', `a hard link to ${what}`);
  }
  // A device asking for the key's track would make the server compress it to /binary/{hash}.
  t.not((await heartbeat(server.url, randomHash(), 'leak-0')).status, 200, 'no track holds the key');
  t.equal((await getBytes(`${server.url}/binary/${sha256Hex(await readFile(fixture.keyPath))}`)).status, 404, 'the key is not downloadable');
  t.equal((await getBytes(`${server.url}/binary/${sha256Hex(await readFile(fixture.tokenPath))}`)).status, 404, 'nor the token');
  const served = await heartbeatUntilSigned(server.url, randomHash(), 'app');
  t.equal((await getBytes(`${server.url}${served.binary_endpoint}`)).status, 200, 'while the file published from the root is');
  const copied = await fixture.writeBinary('builds/app2.bin', firmware(20_000, 'hl-app2'));
  await link(copied.path, join(builds, 'app2-again.bin'));
  t.equal((await publish(join(builds, 'app2-again.bin'))).status, 200, 'a hard link between two build outputs is published');
});
