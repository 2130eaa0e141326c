import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { validateConfig } from '../../../src/shared/config/load.js';
import { makeFixture } from '../../helpers/fixture.js';
import { configDocument } from '../../helpers/server.js';

t.test('webhooks and admin.max_upload_mb: read and checked at start, the key named', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const load = (overrides: Record<string, unknown>) => validateConfig(configDocument(fixture, 8080, [], overrides), `${fixture.dir}/updater.yaml`);
  const secret = join(fixture.dir, 'hook.secret');
  await writeFile(secret, '  s3cret-s3cret-s3cret \n');
  const short = join(fixture.dir, 'short.secret');
  await writeFile(short, 'tiny\n');
  const hook = (extra: Record<string, unknown> = {}) => ({ url: 'https://hooks.example.com/x', secret_file: secret, events: ['updater.rollout.paused'], ...extra });

  const defaults = load({});
  t.same(defaults.webhooks, [], 'none by default');
  t.equal(defaults.admin.maxUploadBytes, 4096 * 1024 * 1024, 'uploads up to 4096 MiB by default');
  t.equal(load({ admin: { token_file: fixture.tokenPath, max_upload_mb: 8 } }).admin.maxUploadBytes, 8 * 1024 * 1024);
  t.throws(() => load({ admin: { token_file: fixture.tokenPath, max_upload_mb: 0 } }), /admin\.max_upload_mb must be an integer/);

  const one = load({ webhooks: [hook()] }).webhooks[0]!;
  t.same(one, { url: 'https://hooks.example.com/x', secretFile: secret, events: ['updater.rollout.paused'], secret: 's3cret-s3cret-s3cret' }, 'the secret is read, white space trimmed');

  t.throws(() => load({ webhooks: [hook({ url: 'ftp://hooks.example.com/' })] }), /webhooks\[0\]\.url must be an http:\/\/ or https:\/\/ URL/);
  t.throws(() => load({ webhooks: [hook({ url: 'not a url' })] }), /webhooks\[0\]\.url is not a valid URL/);
  t.throws(() => load({ webhooks: [hook({ url: 'https://user:pw@hooks.example.com/' })] }), /webhooks\[0\]\.url must not carry credentials/);
  t.throws(() => load({ webhooks: [hook({ events: ['updater.rollout.exploded'] })] }), /webhooks\[0\]\.events names "updater.rollout.exploded" \(item 0\), which is not an event type/);
  t.throws(() => load({ webhooks: [hook({ events: [] })] }), /webhooks\[0\]\.events must be a non-empty list/);
  t.throws(() => load({ webhooks: [hook({ events: ['updater.track.removed', 'updater.track.removed'] })] }), /names an event type twice/);
  t.throws(() => load({ webhooks: [hook({ secret_file: join(fixture.dir, 'missing') })] }), /webhooks\[0\]\.secret_file cannot read/);
  t.throws(() => load({ webhooks: [hook({ secret_file: short })] }), /webhooks\[0\]\.secret_file must hold at least 16 characters/);
  t.throws(() => load({ webhooks: [hook(), hook()] }), /webhooks\[1\]\.url names a URL an earlier webhook already has/);
  t.throws(() => load({ webhooks: [hook({ colour: 'red' })] }), /colour/);
  t.throws(() => load({ webhooks: [hook()], fleet: { enabled: false } }), /webhooks need the fleet database/);
  let message = '';
  try {
    load({ webhooks: [hook({ secret_file: short })] });
  } catch (err) {
    message = (err as Error).message;
  }
  t.notMatch(message, /tiny/, 'a refused secret is never echoed');
});
