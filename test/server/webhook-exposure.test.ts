import { link, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { adminCall, trackOf } from '../helpers/admin.js';
import { firmware, freePort, makeFixture, sha256Hex } from '../helpers/fixture.js';
import { getBytes } from '../helpers/http.js';
import { configDocument, startTestServer } from '../helpers/server.js';
import { validateConfig } from '../../src/shared/config/load.js';
import { ROLES, type Role } from '../../src/shared/admin-roles.js';

// Issue 36, item 7, played as the attacker. A `publish` operator hard-links a webhook's secret
// file into a publish root and publishes it, to download it by hash and forge signed events; a
// `read` token lists the webhooks, whose URLs (a chat webhook's path, a ?token= query) are
// credentials; an anonymous scraper reads /metrics on the device listener, which names tracks,
// running version hashes and rollout state, when the operator asked for it on the admin
// listener only.

t.setTimeout(180_000);

const SLACK = 'https://hooks.slack.com/services/T0000FAKE/B0000FAKE/XXXXsecretXXXX';
const QUERY = 'https://chat.example.com/hooks/updater?token=query-secret-123';

t.test('webhook secrets are not publishable, and a read token sees webhook URLs redacted', async (t) => {
  const fixture = await makeFixture('updater-hook-exposure-');
  t.teardown(() => fixture.cleanup());
  const builds = join(fixture.dir, 'builds');
  await mkdir(builds);
  const secretFile = join(fixture.dir, 'chat.secret');
  await writeFile(secretFile, 'chat-webhook-secret-0123456789abcdef\n');
  await link(secretFile, join(builds, 'firmware.bin'));
  const v1 = await fixture.writeBinary('v1.bin', firmware(8_000, 'hook-exposure'));
  const server = await startTestServer(fixture, [{ name: 'base', version: '1', binary: v1.path }], {
    store: { dir: join(fixture.dir, 'store'), publish_roots: [builds, fixture.dir], full_compression_level: 3 },
    // Events that never happen here: nothing is sent to these URLs.
    webhooks: [
      { url: SLACK, secret_file: secretFile, events: ['updater.rollout.aborted'] },
      { url: QUERY, secret_file: secretFile, events: ['updater.rollout.aborted'] },
    ],
  });
  t.teardown(() => server.stop());

  const attempts: [string, string][] = [['a hard link in a publish root', join(builds, 'firmware.bin')], ['the file itself, below a root', secretFile]];
  for (const [why, path] of attempts) {
    const answer = await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'leak', version: '1', binary: path });
    t.equal(answer.status, 403, `${why} to a webhook secret is refused`);
    t.equal(answer.json?.error?.code, 'PUBLISH_PATH_FORBIDDEN', why);
  }
  t.equal(await trackOf(server.url, 'leak'), undefined, 'no track serves it');
  t.equal((await getBytes(`${server.url}/binary/${sha256Hex(await readFile(secretFile))}`)).status, 404, 'the secret is not downloadable by hash');

  const tokens = {} as Record<Role, string>;
  for (const role of ROLES) tokens[role] = (await adminCall(server.url, 'POST', '/admin/tokens', { name: `hooks-${role}`, role })).json.token;
  for (const role of ROLES) {
    const answer = await adminCall(server.url, 'GET', '/admin/webhooks', undefined, tokens[role]);
    t.equal(answer.status, 200, `${role} lists the webhooks`);
    const urls = answer.json.webhooks.map((w: { url: string }) => w.url);
    if (role === 'operate' || role === 'admin') {
      t.same(urls, [SLACK, QUERY], `${role} sees the URLs as configured`);
    } else {
      t.same(urls, ['https://hooks.slack.com/services/***/***/***', 'https://chat.example.com/hooks/***?***'], `${role} sees them redacted`);
      t.notMatch(JSON.stringify(answer.json), /XXXXsecret|T0000FAKE|query-secret|updater\?/, `no part of a secret reaches ${role}`);
    }
  }
  t.same((await adminCall(server.url, 'GET', '/admin/webhooks')).json.webhooks.map((w: { url: string }) => w.url), [SLACK, QUERY], 'the configured token (admin) too');
});

t.test('metrics.listener: admin serves /metrics on listen.admin and nowhere else', async (t) => {
  const fixture = await makeFixture('updater-metrics-listener-');
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(8_000, 'metrics-listener'));
  const adminPort = await freePort();
  const server = await startTestServer(fixture, [{ name: 'app', version: '1', binary: v1.path }], {
    listen: { admin: `127.0.0.1:${adminPort}` }, metrics: { listener: 'admin' },
  });
  t.teardown(() => server.stop());
  const device = await fetch(`${server.url}/metrics`);
  t.equal(device.status, 404, 'the device listener does not serve /metrics');
  t.notMatch(await device.text(), /updater_/, 'and shows no metric');
  const admin = await fetch(`http://127.0.0.1:${adminPort}/metrics`);
  t.equal(admin.status, 200, 'the admin listener does');
  t.match(await admin.text(), /updater_manifest_decisions_total/);

  const doc = (metrics: string, listen: Record<string, string>) => configDocument(fixture, 1, [{ name: 'app', version: '1', binary: v1.path }], { metrics: { listener: metrics }, listen });
  t.throws(() => validateConfig(doc('admin', { http: '127.0.0.1:1' }), join(fixture.dir, 'x.yaml')), /metrics\.listener/, 'admin without listen.admin is refused at start');
  t.equal(validateConfig(doc('public', { http: '127.0.0.1:1' }), join(fixture.dir, 'x.yaml')).metrics.listener, 'public', 'public stays the default behaviour');
});
