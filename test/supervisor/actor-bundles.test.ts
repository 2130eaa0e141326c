import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { serveFile } from '../../src/cli.js';
import type { ActorName } from '../../src/messages/lifecycle.js';
import { actorFile } from '../../src/supervisor/actor-host.js';
import { newestModule, ourClasses, renamedClasses } from '../helpers/bundles.js';
import { firmware, makeFixture } from '../helpers/fixture.js';
import { heartbeatUntilSigned } from '../helpers/http.js';
import { REPO_ROOT, runUpdater, startTestServer } from '../helpers/server.js';

// Each actor's worker runs the bundle `npm run build` makes of it (tools/build.js,
// docs/architecture.md "Actor bundles"), which every other server test then exercises: the
// console's files and the diff pool's task file are found from the bundles' depth. Here: the
// bundles are there and current, the supervisor starts them, and UPDATER_UNBUNDLED=1 starts the
// separate modules instead, which no other test does. The main thread of `updater serve` runs a
// bundle too (src/cli.ts serveFile), which every test that spawns a server exercises.

/** Every actor, checked by the compiler: a new actor fails to compile here until it is listed. */
const EVERY_ACTOR: Record<ActorName, true> = { 'store-keeper': true, fleet: true, manifester: true, sweeper: true, http: true, coap: true };
const ACTORS = Object.keys(EVERY_ACTOR) as ActorName[];
const DIST_SRC = join(REPO_ROOT, 'dist', 'src');

t.test('every actor has a bundle newer than every compiled module, and actorFile names it', async (t) => {
  const newest = newestModule('src');
  for (const actor of ACTORS) {
    const file = fileURLToPath(actorFile(actor));
    t.equal(file, join(DIST_SRC, 'actors', actor, 'index.bundle.mjs'), `${actor} runs its bundle`);
    t.ok(statSync(file).mtimeMs >= newest, `${actor}'s bundle is not older than dist/src (npm run build remade it)`);
  }
  const serve = fileURLToPath(serveFile());
  t.equal(serve, join(DIST_SRC, 'supervisor', 'serve.bundle.mjs'), '`updater serve` runs its bundle');
  t.ok(statSync(serve).mtimeMs >= newest, 'the serve bundle is not older than dist/src');
});

// esbuild's keepNames wraps every function expression in a call that defines its `name`, run
// each time a closure is made: on the heartbeat route it cost 8.7 % of the HTTP thread
// (bench/results/2026-11-28-bundle-names.md). Without it, esbuild renames a class only where
// another of the same name is in the bundle; none of ours may be, since logs name them.
t.test('the bundles define no function names at run time, and our own classes keep theirs', async (t) => {
  const ours = ourClasses('src');
  t.ok(ours.has('UpdaterError') && ours.has('TokenChecker'), `our classes are found (${ours.size})`);
  for (const [name, file] of [...ACTORS.map((actor) => [actor, actorFile(actor)] as const), ['serve', serveFile()] as const]) {
    const bundle = readFileSync(fileURLToPath(file), 'utf8');
    t.notMatch(bundle, /\b__name\(/, `${name}'s bundle does not name functions as it runs`);
    t.same(renamedClasses(bundle, ours), [], `${name}'s bundle renames none of our classes`);
  }
});

t.test('UPDATER_UNBUNDLED=1 names each actor\'s own index.js', async (t) => {
  const before = process.env.UPDATER_UNBUNDLED;
  process.env.UPDATER_UNBUNDLED = '1';
  t.teardown(() => (before === undefined ? delete process.env.UPDATER_UNBUNDLED : (process.env.UPDATER_UNBUNDLED = before)));
  for (const actor of ACTORS) t.equal(fileURLToPath(actorFile(actor)), join(DIST_SRC, 'actors', actor, 'index.js'), actor);
  t.equal(fileURLToPath(serveFile()), join(DIST_SRC, 'supervisor', 'serve.js'), 'serve');
});

t.test('`updater serve` refuses a configuration it cannot read alike, bundled or not', async (t) => {
  const missing = join(DIST_SRC, 'no-such.yaml');
  for (const unbundled of ['0', '1']) {
    const run = await runUpdater(['serve', '--config', missing], 30_000, { UPDATER_UNBUNDLED: unbundled });
    t.equal(run.code, 2, `UPDATER_UNBUNDLED=${unbundled}: a configuration error exits 2`);
    t.match(run.stderr, /configuration error: .*no-such\.yaml/, 'and names the file');
  }
});

// One server each way, serving a signed delta: the heartbeat crosses the front-end, the
// manifester, the store-keeper and its diff pool's task file.
for (const unbundled of [false, true]) {
  t.test(`a server whose actors run ${unbundled ? 'unbundled' : 'bundled'} serves a signed delta`, async (t) => {
    const before = process.env.UPDATER_UNBUNDLED;
    if (unbundled) process.env.UPDATER_UNBUNDLED = '1';
    else delete process.env.UPDATER_UNBUNDLED;
    t.teardown(() => (before === undefined ? delete process.env.UPDATER_UNBUNDLED : (process.env.UPDATER_UNBUNDLED = before)));
    const fixture = await makeFixture();
    t.teardown(() => fixture.cleanup());
    const v1 = await fixture.writeBinary('v1.bin', firmware(40_000, 'bundles'));
    const v2 = await fixture.writeBinary('v2.bin', Buffer.concat([firmware(40_000, 'bundles'), Buffer.from('v2')]));
    // v1 is served too (as another track), so the store holds the source of the delta.
    const server = await startTestServer(fixture, [
      { name: 'app', version: '2', binary: v2.path },
      { name: 'old', version: '1', binary: v1.path },
    ], { default_artifact: 'app' });
    t.teardown(() => server.stop());
    for (const actor of ['http', 'manifester', 'store-keeper', 'sweeper', 'fleet'] as const) {
      const file = fileURLToPath(server.supervisor.actor(actor)!.file!);
      t.equal(file.split('/').pop(), unbundled ? 'index.js' : 'index.bundle.mjs', `${actor}'s worker runs ${unbundled ? 'its index.js' : 'its bundle'}`);
      t.equal(dirname(file), join(DIST_SRC, 'actors', actor));
    }
    const manifest = await heartbeatUntilSigned(server.url, v1.hash);
    t.equal(manifest.target_hash, v2.hash, 'the answer names the new version');
    t.ok(manifest.delta_size > 0 && manifest.delta_endpoint, 'with a delta made by the diff pool');
  });
}
