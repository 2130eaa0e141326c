import { existsSync } from 'node:fs';
import { symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { ConfigError, validateAgentConfig } from '../../agent/config.js';
import { makeFixture } from '../helpers/fixture.js';
import { runUpdater } from '../helpers/server.js';

const KEY = 'a'.repeat(64);
const minimal = { device_id: 'dev-1', public_key: KEY, http_url: 'http://127.0.0.1:8080', slot_dir: '/var/lib/updater', restart_command: 'true' };

t.test('a minimal configuration gets the documented defaults', async (t) => {
  const config = validateAgentConfig(minimal, '/etc/updater/agent.yaml');
  t.match(config, {
    deviceId: 'dev-1', artifact: '', primary: 'http', intervalMs: 300_000, healthCheckTries: 3, maxBootAttempts: 3,
    diskFullBackoffMs: 300_000, restartCooldownMs: 3_600_000, slotDir: '/var/lib/updater',
  });
  t.ok(Object.isFrozen(config));
  t.equal(validateAgentConfig({ ...minimal, slot_dir: 'slots' }, '/etc/updater/agent.yaml').slotDir, '/etc/updater/slots',
    'a relative slot_dir is relative to the configuration file');
  t.equal(config.attributes, undefined, 'no attributes: the heartbeat carries none, so the server keeps what it has');
  t.same(validateAgentConfig({ ...minimal, attributes: { tz: 'Europe/Berlin', hw: 'B' } }, '/etc/updater/agent.yaml').attributes, { hw: 'B', tz: 'Europe/Berlin' });
  t.same(validateAgentConfig({ ...minimal, attributes: {} }, '/etc/updater/agent.yaml').attributes, {}, 'an empty map is sent, and clears the stored set');
});

t.test('every configuration error names its key', async (t) => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ ...minimal, public_key: 'ABC' }, 'public_key'],
    [{ ...minimal, public_key: KEY.toUpperCase() }, 'public_key'],
    [{ ...minimal, interval: 'often' }, 'interval'],
    [{ ...minimal, primary: 'udp' }, 'primary'],
    [{ ...minimal, primary: 'coap' }, 'coap_url'],
    [{ ...minimal, http_url: 'ftp://x' }, 'http_url'],
    [{ ...minimal, http_url: 'http://127.0.0.1:8080/api' }, 'http_url'],
    [{ ...minimal, coap_url: 'http://127.0.0.1' }, 'coap_url'],
    [{ ...minimal, slot_dir: undefined }, 'slot_dir'],
    [{ ...minimal, restart_command: '' }, 'restart_command'],
    [{ ...minimal, device_id: undefined }, 'device_id'],
    [{ ...minimal, artifact: 'app/linux' }, 'artifact'],
    [{ ...minimal, artifact: '..' }, 'artifact'],
    [{ ...minimal, disk_full_backoff: '1m' }, 'disk_full_backoff'],
    [{ ...minimal, health_check_tries: 0 }, 'health_check_tries'],
    [{ ...minimal, retry_base: '1m', retry_max: '10s' }, 'retry_max'],
    [{ ...minimal, log_level: 'loud' }, 'log_level'],
    [{ ...minimal, intervall: '5m' }, 'intervall'],
    [{ ...minimal, attributes: ['hw', 'B'] }, 'attributes'],
    [{ ...minimal, attributes: { 'hw rev': 'B' } }, 'attributes'],
    [{ ...minimal, attributes: { hw: 'x'.repeat(129) } }, 'attributes'],
    [{ ...minimal, attributes: { hw: 2 } }, 'attributes'],
    [{ ...minimal, attributes: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])) }, 'attributes'],
  ];
  for (const [doc, key] of cases) {
    let caught: unknown;
    try {
      validateAgentConfig(doc, '/x/agent.yaml');
    } catch (err) {
      caught = err;
    }
    t.ok(caught instanceof ConfigError && caught.key === key && caught.message.startsWith(`${key} `),
      `${key} = ${JSON.stringify(doc[key] ?? null)} is refused: ${(caught as Error | undefined)?.message}`);
  }
});

t.test('updater agent refuses a bad configuration with status 2 and names the key', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const path = join(fixture.dir, 'agent.yaml');
  await writeFile(path, stringify({ ...minimal, interval: 'soon' }));
  const run = await runUpdater(['agent', '--config', path, '--once']);
  t.equal(run.code, 2);
  t.match(run.stderr, /configuration error: interval must be a duration/);
  const help = await runUpdater(['agent', '--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /updater agent --config FILE \[--once\]/);
});

t.test('an unprovisioned slot directory stops the agent with a clear error', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const path = join(fixture.dir, 'agent.yaml');
  await writeFile(path, stringify({ ...minimal, slot_dir: fixture.dir }));
  const run = await runUpdater(['agent', '--config', path, '--once']);
  t.equal(run.code, 1);
  t.match(run.stdout, /AGENT_SLOT_DIR_INVALID/);
  t.match(run.stdout, /current must be a symlink to slot-a or slot-b/);
});

t.test('a second agent on the same slot directory refuses to start; a dead owner\'s lock is taken over', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const path = join(fixture.dir, 'agent.yaml');
  // No server listens here: the cycle fails after the lock, which is all this test needs.
  await writeFile(path, stringify({ ...minimal, slot_dir: fixture.dir, http_url: 'http://127.0.0.1:9', request_timeout: '2s' }));
  await writeFile(join(fixture.dir, 'slot-a'), 'v1');
  await symlink('slot-a', join(fixture.dir, 'current'));
  await writeFile(join(fixture.dir, '.agent.lock'), `${process.pid}\n`);
  const refused = await runUpdater(['agent', '--config', path, '--once']);
  t.equal(refused.code, 1);
  t.match(refused.stdout, new RegExp(`another agent \\(pid ${process.pid}\\) is running`));
  await writeFile(join(fixture.dir, '.agent.lock'), '999999999\n');
  const taken = await runUpdater(['agent', '--config', path, '--once']);
  t.notMatch(taken.stdout, /another agent/, 'a lock whose owner is gone is taken over');
  t.match(taken.stdout, /AGENT_TRANSPORT_FAILED/, 'and the cycle ran');
  t.notOk(existsSync(join(fixture.dir, '.agent.lock')), 'the lock is released at exit');
});
