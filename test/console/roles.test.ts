import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { adminCall, eventually } from '../helpers/admin.js';
import { launchChromium, signIn } from '../helpers/browser.js';
import { ADMIN_TOKEN, firmware, makeFixture, nextVersion } from '../helpers/fixture.js';
import { startTestServer } from '../helpers/server.js';
import { startReceiver } from '../helpers/webhook-receiver.js';
import { WEBHOOK_EVENT_TYPES } from '../../src/shared/webhooks/events.js';
import { redactWebhookUrl } from '../../src/actors/http/admin/webhook-routes.js';

// The console signed in with tokens of different roles, in Debian's Chromium against a real
// server: a read token sees the fleet but no control the server would refuse it (no rollout
// buttons, no Tokens page); the configured admin token creates a token (its secret shown once),
// sees it listed, revokes it, and finds both in the Audit page. The Webhooks page shows each
// configured webhook's outbox: a receiver that refuses its first attempts is seen waiting with
// its failed attempts listed, then delivered.

const WEBHOOK_SECRET = 'console-webhook-secret-0123456789';

t.test('the console shows each role only what it may do; tokens and the audit log have their pages', async (t) => {
  const fixture = await makeFixture('updater-console-roles-');
  t.teardown(() => fixture.cleanup());
  const v1 = firmware(50_000, 'roles-console-1');
  const app1 = await fixture.writeBinary('app-1.bin', v1);
  const app2 = await fixture.writeBinary('app-2.bin', nextVersion(v1, 'roles-console-2'));
  // Two receivers that check every signature: one that always answers, one the test makes fail.
  const steady = await startReceiver(WEBHOOK_SECRET);
  const flaky = await startReceiver(WEBHOOK_SECRET);
  t.teardown(() => Promise.all([steady.close(), flaky.close()]));
  const secretFile = join(fixture.dir, 'webhook.secret');
  await writeFile(secretFile, `${WEBHOOK_SECRET}\n`);
  const server = await startTestServer(fixture, [], {
    fleet: { flush_interval: '200ms' },
    webhooks: [steady, flaky].map((r) => ({ url: r.url, secret_file: secretFile, events: [...WEBHOOK_EVENT_TYPES] })),
  });
  t.teardown(() => server.stop());
  const url = server.url;
  t.equal((await adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '1.0.0', binary: app1.path })).status, 200);
  const rolled = await adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '2.0.0', binary: app2.path, rollout: { steps: [10, 100], step_interval: '1h' } });
  t.equal(rolled.status, 200, JSON.stringify(rolled.json));
  const read = await adminCall(url, 'POST', '/admin/tokens', { name: 'dashboard', role: 'read' });
  t.equal(read.status, 201);

  const chromium = await launchChromium();
  t.teardown(() => chromium.close());
  const problems: string[] = [];
  const refused: string[] = [];
  const shots = join(fixture.dir, 'shots');
  const buttonsOf = (page: Page) => () => page.evaluate<string[]>('[...document.querySelectorAll("main button, header button")].map((b) => b.textContent.trim())');

  /** Each subtest signs in in a context of its own, closed when it ends, passed or not. */
  const session = async (t: Test, token: string) => {
    const { page, close } = await chromium.open();
    t.teardown(close);
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('response', (r) => { if (r.status() === 403) refused.push(`${r.request().method()} ${r.url()}`); });
    await signIn(page, url, token);
    return { page, buttons: buttonsOf(page) };
  };

  await t.test('a read token sees the tracks and the rollout, and no button that would be refused', async (t) => {
    const { page, buttons } = await session(t, read.json.token);
    t.match(await page.getByTestId('signed-in-as').innerText(), /dashboard\s+read/);
    const nav = await page.getByRole('navigation', { name: 'Sections' }).innerText();
    t.match(nav, /Tracks/);
    t.match(nav, /Audit/, 'every role may read the audit log');
    t.notMatch(nav, /Tokens/, 'no Tokens page for a read token');
    t.match(nav, /Webhooks/, 'every role may read the webhooks\' state');

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

    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
    // A read token sees webhook URLs redacted (they may hold a chat channel's token).
    await page.getByRole('region', { name: 'Webhooks' }).getByText(redactWebhookUrl(steady.url)).waitFor();
    t.notMatch(await page.getByRole('region', { name: 'Webhooks' }).innerText(), /hooks\/updater/, 'the URLs are shown redacted to a read token');
    t.same(await buttons(), ['Sign out'], 'the webhooks page has no control');
    t.same(refused, [], 'the console never made a call the server refused with 403');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
    t.pass('signing out returns to the sign-in form');
  });

  await t.test('an operate token gets the rollout controls', async (t) => {
    const operate = await adminCall(url, 'POST', '/admin/tokens', { name: 'on-call', role: 'operate' });
    const { page, buttons } = await session(t, operate.json.token);
    await page.goto(`${url}/console/#/tracks/app`);
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    t.ok((await buttons()).includes('Abort…'));
    t.notMatch(await page.getByRole('navigation', { name: 'Sections' }).innerText(), /Tokens/);
  });

  await t.test('the admin creates a token, sees its secret once, and revokes it', async (t) => {
    const { page } = await session(t, ADMIN_TOKEN);
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
    // The message shows as the list reloads: wait for the row to go (it never does, the test fails).
    await page.getByTestId('token-row').filter({ hasText: 'ci-browser' }).waitFor({ state: 'detached', timeout: 10_000 }).catch(() => undefined);
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

  await t.test('the Webhooks page shows each webhook waiting on a failing receiver, then delivered', async (t) => {
    const { page } = await session(t, ADMIN_TOKEN);
    const state = async () => (await adminCall(url, 'GET', '/admin/webhooks')).json;
    await eventually('the events so far are delivered to both', state, (s) => s.webhooks.every((w: { pending: number }) => w.pending === 0));
    // The receiver refuses every attempt until the page (polled every 4 s) has shown the
    // failing state, whatever the machine's pace, then answers the next retry (5 s after the
    // first refusal, then 10 s after the second: docs/operations.md).
    const refusedBefore = flaky.requests.length;
    flaky.failNext(Number.MAX_SAFE_INTEGER);
    t.equal((await adminCall(url, 'POST', '/admin/artifacts', { name: 'hooked', version: '1.0.0', binary: app1.path })).status, 200);

    await page.goto(`${url}/console/#/webhooks`);
    const row = (receiver: { url: string }) => page.getByRole('region', { name: 'Webhooks' }).getByRole('row').filter({ hasText: receiver.url });
    /** The row's cells after the URL: Events, Waiting, Oldest waiting, Next attempt, Delivered, Last delivery, Given up. */
    const cells = async (receiver: { url: string }) => (await row(receiver).locator('td').allInnerTexts()).map((c) => c.trim());
    const failures = page.getByRole('region', { name: 'Failed attempts' });
    await failures.getByRole('row').filter({ hasText: 'answered 500' }).waitFor({ timeout: 30_000 });
    const failing = await cells(flaky);
    t.equal(failing[1], '1', 'the failing webhook has the event waiting');
    t.not(failing[3], '—', 'with its next attempt scheduled');
    t.equal(failing[6], '0', 'and nothing given up');
    t.match(await failures.innerText(), /track\.published[\s\S]*answered 500[\s\S]*retry/);
    t.notMatch(await failures.innerText(), new RegExp(steady.url.replace(/[/.]/g, '\\$&')), 'the steady webhook has no failed attempt');
    t.equal((await cells(steady))[1], '0', 'the steady webhook has nothing waiting');
    await page.screenshot({ path: join(shots, 'webhooks-failing.png'), fullPage: true });

    flaky.failNext(0);
    await page.getByText('No delivery is failing.').waitFor({ timeout: 90_000 });
    const delivered = await cells(flaky);
    t.equal(delivered[1], '0', 'nothing waits once the receiver answered');
    t.equal(delivered[4], (await cells(steady))[4], 'the failing webhook delivered as many events as the steady one');
    t.equal(delivered[4], String((await state()).webhooks[1].delivered), 'the count the server keeps');
    const attempts = flaky.requests.slice(refusedBefore).map((r) => r.status);
    t.ok(attempts.length >= 2 && attempts.slice(0, -1).every((status) => status === 500) && attempts.at(-1) === 204, `refusals, then the delivery (${attempts})`);
    t.ok([...steady.requests, ...flaky.requests].every((r) => r.signatureValid), 'every attempt was signed with the secret');
    await page.screenshot({ path: join(shots, 'webhooks-delivered.png'), fullPage: true });
  });

  t.same(problems, [], 'no page errors');
});
