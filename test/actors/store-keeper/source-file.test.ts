import { link, mkdir, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { openVerified } from '../../../src/actors/store-keeper/source-file.js';
import { loadConfigFile } from '../../../src/shared/config/load.js';
import { identityOf } from '../../../src/shared/protected-files.js';
import { firmware, freePort, makeFixture } from '../../helpers/fixture.js';
import { configDocument, writeConfig } from '../../helpers/server.js';

// The store-keeper's open-and-verify of a publish path, played directly: the manifester's
// check passed for one file (its device and inode travel with the request), then the path was
// swapped before the store-keeper opened it. Racing a real swap between the two actors is not
// something a test can time, so the swap is made first and the open is called as the actor
// calls it. The end-to-end refusals are in test/server/publish-paths.test.ts.

t.test('the store-keeper checks the descriptor it opened, not the path the manifester checked', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const builds = join(fixture.dir, 'builds');
  await mkdir(builds);
  const app = await fixture.writeBinary('builds/app.bin', firmware(10_000, 'toctou-app'));
  const config = loadConfigFile(await writeConfig(fixture, configDocument(fixture, await freePort(), [], { store: { dir: join(fixture.dir, 'store'), publish_roots: [builds] } })));
  const checked = identityOf(await stat(app.path, { bigint: true }));
  const refused = async (what: string, expected = checked) => {
    await t.rejects(openVerified({ path: app.path, expected, config }), { code: 'PUBLISH_PATH_FORBIDDEN' }, what);
  };

  const handle = await openVerified({ path: app.path, expected: checked, config });
  t.ok((await handle.stat()).isFile(), 'the file the manifester checked opens');
  await handle.close();

  // Another file renamed over the path: same name, same bytes even, another inode.
  const copy = await fixture.writeBinary('builds/app.copy', firmware(10_000, 'toctou-app'));
  await rename(copy.path, app.path);
  await refused('a path whose inode changed after the check');

  // The attack itself: the path swapped for a hard link to the signing key.
  await link(fixture.keyPath, join(builds, 'key.tmp'));
  await rename(join(builds, 'key.tmp'), app.path);
  await refused('a hard link to the signing key in place of the checked file');
  await refused('and even when it is the inode the check saw', identityOf(await stat(app.path, { bigint: true })));
  await t.rejects(openVerified({ path: app.path, config }), { code: 'PUBLISH_PATH_FORBIDDEN' }, 'a configured path (no identity) is held to the protected files too');

  await link(fixture.tokenPath, join(builds, 'token-link'));
  await t.rejects(openVerified({ path: join(builds, 'token-link'), expected: identityOf(await stat(fixture.tokenPath, { bigint: true })), config }), { code: 'PUBLISH_PATH_FORBIDDEN' }, 'a hard link to the admin token file');
});
