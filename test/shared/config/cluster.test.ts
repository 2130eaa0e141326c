import { join } from 'node:path';
import t from 'tap';
import { validateConfig } from '../../../src/shared/config/load.js';
import { engineOf } from '../../../src/shared/database/location.js';
import { makeFixture } from '../../helpers/fixture.js';
import { configDocument } from '../../helpers/server.js';

// "Is this a cluster?" is decided once, when the configuration is loaded (config.cluster), and
// the engine a database is opened with (engineOf) must agree with it for every spelling the
// schema lets through. Spellings a URL parser accepts but the engine check did not
// (postgres:u@db/x) once counted as a cluster at load and were opened as an SQLite file.

t.test('config.cluster: decided once, the same way the database is opened', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const load = (database?: string, overrides: Record<string, unknown> = {}) =>
    validateConfig(configDocument(fixture, 8080, [], { ...(database === undefined ? {} : { database }), ...overrides }), join(fixture.dir, 'updater.yaml'));

  const cases: [string | undefined, boolean][] = [
    [undefined, false],
    ['var/fleet.db', false],
    ['postgres-data/fleet.db', false],
    ['postgres.db', false],
    ['/srv/postgresql/fleet.db', false],
    ['postgres://u:p@db:5432/updater', true],
    ['postgresql://u@db/updater', true],
    ['postgres://db/updater', true],
  ];
  for (const [database, cluster] of cases) {
    const config = load(database);
    t.equal(config.cluster, cluster, `${database ?? '(default)'}: ${cluster ? 'a cluster replica' : 'a single node'}`);
    t.equal(engineOf(config.database) === 'postgres', config.cluster, `${database ?? '(default)'}: opened with the engine config.cluster implies`);
  }

  for (const odd of ['postgres:u@db/x', 'postgresql:u@db/x', 'postgres:/db/x', 'POSTGRES://u@db/x', 'PostgreSQL://u@db/x']) {
    t.throws(() => load(odd), /^database is not a valid postgres:\/\/ URL/, `${odd}: refused, neither a cluster nor an SQLite file`);
  }
  t.throws(() => load('postgres://u@db/x', { store: { dir: join(fixture.dir, 'store'), state_file: 'tracks.json' } }), /^store\.state_file must not be set with a postgres:\/\/ database/, 'a cluster keeps no state file');
  t.equal(load('postgres-data/fleet.db', { store: { dir: join(fixture.dir, 'store'), state_file: 'tracks.json' } }).store.stateFile, join(fixture.dir, 'tracks.json'), 'a file named like the engine is a single node with its state file');
});
