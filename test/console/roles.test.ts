import { join } from 'node:path';
import t from 'tap';
import { adminCall } from '../helpers/admin.js';
import { openBrowser } from '../helpers/browser.js';
import { ADMIN_TOKEN, firmware, makeFixture, nextVersion } from '../helpers/fixture.js';
import { startTestServer } from '../helpers/server.js';

// The console signed in with tokens of different roles, in Debian's Chromium against a real
// server: a read token sees the fleet but no control the server would refuse it (no rollout
// buttons, no Tokens page); the configured admin token creates a token (its secret shown once),
// sees it listed, revokes it, and finds both in the Audit page.

t.test('the console shows each role only what it may do; tokens and the audit log have their pages', async (t) => {
  const fixture = await makeFixture('updater-console-roles-');
  t.teardown(() => fixture.cleanup());
  const v1 = firmware(50_000, 'roles-console-1');
  const app1 = await fixture.writeBinary('app-1.bin', v1);
  const app2 = await fixture.writeBinary('app-2.bin', nextVersion(v1, 'roles-console-2'));
  const server = await startTestServer(fixture, [], { fleet: { flush_interval: '200ms' } });
  t.teardown(() => server.stop());
  const url = server.url;
  t.equal((await adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '1.0.0', binary: app1.path })).status, 200);
  const rolled = await adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '2.0.0', binary: app2.path, rollout: { steps: [10, 100], step_interval: '1h' } });
  t.equal(rolled.status, 200, JSON.stringify(rolled.json));
  const read = await adminCall(url, 'POST', '/admin/tokens', { name: 'dashboard', role: 'read' });
  t.equal(read.status, 201);

  const browser = await openBrowser();
  t.teardown(() => browser.close());
  const { page } = browser;
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  const refused: string[] = [];
  page.on('response', (r) => { if (r.status() === 403) refused.push(`${r.request().method()} ${r.url()}`); });
  const shots = join(fixture.dir, 'shots');
  const buttons = () => page.evaluate<string[]>('[...document.querySelectorAll("main button, header button")].map((b) => b.textContent.trim())');

  const signIn = async (token: string) => {
    await page.goto(`${url}/console/`);
    await page.getByLabel('Admin token').fill(token);
    await page.keyboard.press('Enter');
    await page.getByTestId('signed-in-as').waitFor();
  };

  await t.test('a read token sees the tracks and the rollout, and no button that would be refused', async (t) => {
    await signIn(read.json.token);
    t.match(await page.getByTestId('signed-in-as').innerText(), /dashboard\s+read/);
    const nav = await page.getByRole('navigation', { name: 'Sections' }).innerText();
    t.match(nav, /Tracks/);
    t.match(nav, /Audit/, 'every role may read the audit log');
    t.notMatch(nav, /Tokens/, 'no Tokens page for a read token');

    await page.goto(`${url}/console/#/tracks/app`);
    await page.getByTestId('rollout-state').waitFor();
    t.equal(await page.getByTestId('rollout-state').innerText(), 'running');
    t.same(await buttons(), ['Sign out'], 'the rollout is shown without Pause, Abort or Set percent');
    await page.screenshot({ path: join(shots, 'read-track.png'), fullPage: true });

    await page.goto(`${url}/console/#/tokens`);
    await page.getByRole('heading', { name: 'Tracks' }).waitFor();
    t.pass('#/tokens shows the tracks to a read token');

    await page.goto(`${url}/console/#/audit`);
    await page.getByRole('heading', { name: 'Audit log' }).waitFor();
    t.same((await buttons()).filter((b) => b !== 'Older' && b !== 'Newer'), ['Sign out'], 'the audit page has no control but paging');
    t.same(refused, [], 'the console never made a call the server refused with 403');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
  });

  await t.test('an operate token gets the rollout controls', async (t) => {
    const operate = await adminCall(url, 'POST', '/admin/tokens', { name: 'on-call', role: 'operate' });
    await signIn(operate.json.token);
    await page.goto(`${url}/console/#/tracks/app`);
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    t.ok((await buttons()).includes('Abort…'));
    t.notMatch(await page.getByRole('navigation', { name: 'Sections' }).innerText(), /Tokens/);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
  });

  await t.test('the admin creates a token, sees its secret once, and revokes it', async (t) => {
    await signIn(ADMIN_TOKEN);
    await page.getByRole('link', { name: 'Tokens' }).click();
    await page.getByRole('heading', { name: 'Operator tokens' }).waitFor();
    await page.getByLabel('Name').fill('ci-browser');
    await page.getByLabel('Role').selectOption('publish');
    await page.getByLabel('Expires in').fill('30d');
    await page.getByRole('button', { name: 'Create token' }).click();
    const secret = await page.getByTestId('new-token-secret').inputValue();
    t.match(secret, /^upd_[0-9a-f]{16}_/);
    const me = await adminCall(url, 'GET', '/admin/whoami', undefined, secret);
    t.match(me.json, { token_name: 'ci-browser', role: 'publish' }, 'the secret shown is the token');
    await page.screenshot({ path: join(shots, 'tokens-created.png'), fullPage: true });
    await page.getByRole('button', { name: 'I have copied it' }).click();
    t.equal(await page.getByTestId('new-token').count(), 0, 'the secret is gone once dismissed');
    t.equal(await page.evaluate<boolean>(`document.body.innerHTML.includes(${JSON.stringify(secret)})`), false, 'nowhere on the page');
    t.equal(await page.evaluate<boolean>(`JSON.stringify(sessionStorage).includes(${JSON.stringify(secret)})`), false, 'nor in the tab\'s storage');

    const row = page.getByTestId('token-row').filter({ hasText: 'ci-browser' });
    await row.waitFor();
    t.match(await row.innerText(), /publish/);
    page.once('dialog', (d) => void d.accept());
    await row.getByRole('button', { name: 'Revoke ci-browser' }).click();
    await page.getByText('Token ci-browser revoked.').waitFor();
    t.equal(await page.getByTestId('token-row').filter({ hasText: 'ci-browser' }).count(), 0, 'gone from the list');
    t.equal((await adminCall(url, 'GET', '/admin/whoami', undefined, secret)).status, 401, 'and refused by the server');

    await page.getByRole('link', { name: 'Audit' }).click();
    await page.getByTestId('audit-row').first().waitFor();
    const audit = await page.getByRole('region', { name: 'Audit log' }).innerText();
    t.match(audit, /revoked token [0-9a-f]{16} \(ci-browser, publish\)/);
    t.match(audit, /created token [0-9a-f]{16} \(ci-browser, publish/);
    t.notOk(audit.includes(secret.slice(22)), 'no secret in the audit page');
    await page.screenshot({ path: join(shots, 'audit.png'), fullPage: true });
  });

  t.same(problems, [], 'no page errors');
});
