import t from 'tap';
import { firmware, freePort, makeFixture } from '../helpers/fixture.js';
import { configDocument, runUpdater, writeConfig } from '../helpers/server.js';

t.test('a database URL that cannot be reached stops the start with status 2, naming the key', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const binary = await fixture.writeBinary('app.bin', firmware(512, 'db'));
  const nobody = await freePort();
  const config = await writeConfig(fixture, configDocument(fixture, await freePort(), [{ name: 'app', version: '1.0.0', binary: binary.path }], {
    database: `postgres://updater:secret-pw@127.0.0.1:${nobody}/fleet`,
  }));
  const { code, stderr } = await runUpdater(['serve', '--config', config], 120_000);
  t.equal(code, 2);
  t.match(stderr, /DATABASE_UNREACHABLE: database: cannot open postgres:\/\/updater:\*\*\*@127\.0\.0\.1/);
  t.notMatch(stderr, /secret-pw/, 'the password is not printed');
});

t.test('a database value of another scheme is a configuration error', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const binary = await fixture.writeBinary('app.bin', firmware(512, 'db'));
  const config = await writeConfig(fixture, configDocument(fixture, await freePort(), [{ name: 'app', version: '1.0.0', binary: binary.path }], {
    database: 'mysql://root@localhost/db',
  }));
  const { code, stderr } = await runUpdater(['serve', '--config', config]);
  t.equal(code, 2);
  t.match(stderr, /configuration error: database must be a file path or a postgres:\/\/ URL/);
});
