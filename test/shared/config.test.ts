import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { ConfigError, validateConfig } from '../../src/shared/config/load.js';
import { ADMIN_TOKEN, firmware, makeFixture } from '../helpers/fixture.js';
import { runUpdater, writeConfig } from '../helpers/server.js';
import { parseDuration } from '../../src/shared/duration.js';

t.test('configuration validation', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const bin = await fixture.writeBinary('app.bin', firmware(1000, 'cfg'));
  const configPath = join(fixture.dir, 'updater.yaml');
  const base = () => ({
    listen: { http: '127.0.0.1:8080' },
    signing: { private_key_file: fixture.keyPath },
    admin: { token: ADMIN_TOKEN },
    store: { dir: join(fixture.dir, 'store') },
    artifacts: [{ name: 'app', os: 'linux', arch: 'arm64', version: '1.0', binary: bin.path }],
  });
  const check = (mutate: (doc: any) => void, key: string, pattern: RegExp) => {
    const doc = base();
    mutate(doc);
    let error: unknown;
    try {
      validateConfig(doc, configPath);
    } catch (err) {
      error = err;
    }
    t.ok(error instanceof ConfigError, `${key}: refused`);
    t.match((error as Error | undefined)?.message ?? '', new RegExp(`^${key.replace(/[[\].]/g, '\\$&')} .*${pattern.source}`), `${key}: ${pattern}`);
  };

  t.test('a valid configuration gets its defaults and a default track inferred', async (t) => {
    const config = validateConfig(base(), configPath);
    t.equal(config.defaultArtifact, 'app/linux/arm64', 'one track: default inferred');
    t.equal(config.store.deltaConcurrency, 2);
    t.equal(config.store.deltaEngine, 'native', 'our delta engine unless bsdiff-node is asked for');
    t.equal(config.retention.enabled, false, 'retention is off by default');
    t.equal(config.retention.intervalMs, 6 * 3600_000);
    t.equal(config.retention.deltaMaxAgeMs, 720 * 3600_000);
    t.equal(config.allowFullDownload, false);
    t.same(config.store.publishRoots, [], 'no publish roots unless configured');
    t.same(validateConfig({ ...base(), store: { dir: 'store', publish_roots: ['builds'] } }, configPath).store.publishRoots, [join(fixture.dir, 'builds')], 'relative roots resolve against the configuration');
    t.ok(Object.isFrozen(config) && Object.isFrozen(config.store), 'frozen once validated');
    t.equal(config.database, join(fixture.dir, 'store', 'updater.db'), 'the fleet database: an SQLite file in the store directory');
    t.same(config.fleet, { enabled: true, flushIntervalMs: 1000, bufferBytes: 16 * 1024 * 1024, deviceMaxAgeMs: 2160 * 3600_000, reportMaxAgeMs: 720 * 3600_000, reportBurst: 10, reportsPerMinute: 6, targetingIndexBytes: 16 * 1024 * 1024 });
  });

  t.test('database is a file relative to the configuration, or a postgres:// URL as given', async (t) => {
    t.equal(validateConfig({ ...base(), database: 'var/fleet.db' }, configPath).database, join(fixture.dir, 'var', 'fleet.db'));
    t.equal(validateConfig({ ...base(), database: 'postgres://u:p@db:5432/updater' }, configPath).database, 'postgres://u:p@db:5432/updater');
    const keepAll = validateConfig({ ...base(), fleet: { device_max_age: 0, report_max_age: '0', flush_interval: '250ms', buffer_mb: 4 } }, configPath).fleet;
    t.same(keepAll, { enabled: true, flushIntervalMs: 250, bufferBytes: 4 * 1024 * 1024, deviceMaxAgeMs: 0, reportMaxAgeMs: 0, reportBurst: 10, reportsPerMinute: 6, targetingIndexBytes: 16 * 1024 * 1024 }, '0 keeps everything');
  });

  t.test('the legacy target form folds into a track named default', async (t) => {
    const doc: any = base();
    delete doc.artifacts;
    doc.target = { version: '1.0', binary: bin.path };
    const config = validateConfig(doc, configPath);
    t.same(config.artifacts.map((a) => a.key), ['default']);
    t.equal(config.defaultArtifact, 'default');
  });

  t.test('every error names the key', async () => {
    check((d) => (d.admin.token = 'short-token'), 'admin.token', /at least 32 characters/);
    check((d) => (d.store.delta_concurrency = 0), 'store.delta_concurrency', /integer from 1/);
    check((d) => (d.store.delta_concurrency = 'two'), 'store.delta_concurrency', /integer/);
    check((d) => (d.store.delta_engine = 'xdelta'), 'store.delta_engine', /one of native, bsdiff-node/);
    check((d) => (d.store.target_cache_mb = -1), 'store.target_cache_mb', />= 0/);
    check((d) => (d.manifest = { cache_size: 1.5 }), 'manifest.cache_size', /integer/);
    check((d) => (d.retention = { interval: 'often' }), 'retention.interval', /duration/);
    check((d) => (d.retention = { delta_max_age: '30' }), 'retention.delta_max_age', /duration/);
    check((d) => (d.retention = { enabled: 'yes' }), 'retention.enabled', /true or false/);
    check((d) => (d.store.dri = 'typo'), 'store.dri', /not a known key/);
    check((d) => (d.bogus = 1), 'bogus', /not a known key/);
    check((d) => (d.listen.http = 'localhost'), 'listen.http', /host:port/);
    check((d) => delete d.signing, 'signing.private_key_file', /required/);
    check((d) => (d.signing.private_key_file = join(fixture.dir, 'missing.key')), 'signing.private_key_file', /cannot read/);
    check((d) => delete d.store.dir, 'store.dir', /required/);
    check((d) => delete d.admin.token, 'admin.token', /required/);
    check((d) => (d.log_level = 'verbose'), 'log_level', /one of/);
    check((d) => (d.artifacts[0].binary = join(fixture.dir, 'nope')), 'artifacts[0].binary', /cannot read/);
    check((d) => delete d.artifacts[0].version, 'artifacts[0].version', /required/);
    check((d) => (d.artifacts[0].name = 'bad name'), 'artifacts[0]', /name must match/);
    check((d) => (d.artifacts[0].name = '..'), 'artifacts[0]', /must not be "." or ".."/);
    check((d) => (d.artifacts[0].name = '.'), 'artifacts[0]', /must not be "." or ".."/);
    check((d) => delete d.artifacts[0].arch, 'artifacts[0]', /os and arch must be set together/);
    check((d) => (d.artifacts[0].os = 'Linux'), 'artifacts[0]', /os must match/);
    check((d) => d.artifacts.push({ ...d.artifacts[0], version: '2' }), 'artifacts[1]', /second time/);
    check((d) => d.artifacts.push({ name: 'other', version: '1', binary: bin.path }), 'default_artifact', /required when more than one track/);
    check((d) => (d.default_artifact = 'nosuch'), 'default_artifact', /not a configured track/);
    check((d) => (d.default_artifact = 'app/linux'), 'default_artifact', /os and arch/);
    check((d) => (d.target = { version: '1', binary: bin.path }), 'target', /cannot be combined/);
    check((d) => (d.database = 'mysql://root@db/x'), 'database', /file path or a postgres/);
    check((d) => (d.database = 'postgres://[bad'), 'database', /not a valid postgres/);
    check((d) => (d.fleet = { buffer_mb: 0 }), 'fleet.buffer_mb', /integer from 1/);
    check((d) => (d.fleet = { flush_interval: 'fast' }), 'fleet.flush_interval', /duration/);
    check((d) => (d.fleet = { device_max_age: '-1h' }), 'fleet.device_max_age', /duration/);
    check((d) => (d.fleet = { buffer: 1 }), 'fleet.buffer', /not a known key/);
    check((d) => (d.store.publish_roots = '/srv/builds'), 'store.publish_roots', /list of strings/);
    check((d) => (d.store.publish_roots = ['/srv', 7]), 'store.publish_roots[1]', /non-empty string/);
  });

  t.test('updater serve exits non-zero naming the key, before it listens', async (t) => {
    const doc = { ...base(), store: { dir: join(fixture.dir, 'store'), delta_concurrency: 0 } };
    const path = await writeConfig(fixture, doc, 'bad.yaml');
    const result = await runUpdater(['serve', '--config', path]);
    t.equal(result.code, 2);
    t.match(result.stderr, /store\.delta_concurrency must be an integer from 1 to 64/);
    t.notMatch(result.stdout, /listening/);

    await writeFile(join(fixture.dir, 'broken.yaml'), 'listen: [unclosed');
    const broken = await runUpdater(['serve', '--config', join(fixture.dir, 'broken.yaml')]);
    t.equal(broken.code, 2);
    t.match(broken.stderr, /not valid YAML/);

    const tokenDoc = { ...base(), admin: { token: 'x'.repeat(31) } };
    const tokenResult = await runUpdater(['serve', '--config', await writeConfig(fixture, tokenDoc, 'token.yaml')]);
    t.equal(tokenResult.code, 2);
    t.match(tokenResult.stderr, /admin\.token must be at least 32 characters/);
    t.notMatch(tokenResult.stderr, /x{31}/, 'the token itself is never printed');
  });
});

t.test('durations', async (t) => {
  t.equal(parseDuration('90s'), 90_000);
  t.equal(parseDuration('6h'), 21_600_000);
  t.equal(parseDuration('720h'), 2_592_000_000);
  t.equal(parseDuration('1h30m'), 5_400_000);
  t.equal(parseDuration('250ms'), 250);
  t.equal(parseDuration('6'), undefined);
  t.equal(parseDuration('h'), undefined);
  t.equal(parseDuration('-5s'), undefined);
  t.equal(parseDuration(6), undefined);
});
