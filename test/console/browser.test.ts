import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { adminCall } from '../helpers/admin.js';
import { launchChromium, signIn, tabTo } from '../helpers/browser.js';
import { ADMIN_TOKEN, firmware, freePort, makeFixture, nextVersion } from '../helpers/fixture.js';
import { configDocument, REPO_ROOT, spawnServer, UPDATER_BIN, writeConfig } from '../helpers/server.js';
import { nodeChild } from '../helpers/node-options.js';
import { needs } from '../helpers/system-tools.js';

// The console as an operator uses it, in Debian's Chromium, against a real server whose
// fleet is simulated by `updater load`: sign in, see the tracks, watch a rollout pause itself
// when devices fail, resume it and see the percent move, open the failures and a device's
// reports, abort with roll back, sign out. Mostly with the keyboard. Screenshots of each view
// go to $UPDATER_CONSOLE_SCREENSHOTS (docs/console in the repository) or a temp directory.
// Each subtest opens its own browser context and signs in there, so a failure is reported by
// the subtest it happens in; a subtest that needs the rollout state an earlier one made is
// skipped, naming why, when that one did not get there.

// Long enough that a rollout resumed at 10 or 40 % is paused again by hand (one keypress after
// it moved) before it could reach 100 % by itself: at least one more interval after the move
// it waits for (two when it was resumed at 10 %), short enough to watch it move: the test
// waits one interval for that on purpose.
const STEP_INTERVAL_S = 20;
const WAIT_MS = 120_000;

t.test('an operator follows a rollout through the console', needs('chromium'), async (t) => {
  const fixture = await makeFixture('updater-console-');
  t.teardown(() => fixture.cleanup());
  const shots = process.env.UPDATER_CONSOLE_SCREENSHOTS ? resolve(REPO_ROOT, process.env.UPDATER_CONSOLE_SCREENSHOTS) : join(fixture.dir, 'shots');
  await mkdir(shots, { recursive: true });

  const v1 = firmware(200_000, 'console-app-1');
  const app1 = await fixture.writeBinary('app-1.bin', v1);
  const app2 = await fixture.writeBinary('app-2.bin', nextVersion(v1, 'console-app-2'));
  const sensor = await fixture.writeBinary('sensor.bin', firmware(50_000, 'console-sensor'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [{ name: 'sensor', os: 'linux', arch: 'armv7', version: '3.1.0', binary: sensor.path }], {
    log_level: 'info',
    allow_full_download: true,
    fleet: { flush_interval: '200ms' },
  }));
  const server = await spawnServer(configPath, url);
  t.teardown(() => { server.child.kill('SIGTERM'); return server.exited; });

  // The track the rollout runs on: 1.0.0 published without a rollout (stable at once), then
  // 2.0.0 to 10 % first; more than 20 % failures in five or more reports pause it.
  t.equal((await adminCall(url, 'POST', '/admin/artifacts', { name: 'app', os: 'linux', arch: 'arm64', version: '1.0.0', binary: app1.path })).status, 200);
  const published = await adminCall(url, 'POST', '/admin/artifacts', {
    name: 'app', os: 'linux', arch: 'arm64', version: '2.0.0', binary: app2.path,
    rollout: { steps: [10, 40, 70, 100], step_interval: `${STEP_INTERVAL_S}s`, max_failure_rate: 0.2, min_reports: 5 },
  });
  t.equal(published.status, 200, JSON.stringify(published.json));

  const chromium = await launchChromium();
  t.teardown(() => chromium.close());
  const problems: string[] = [];
  const urls: string[] = [];
  // The page of the subtest running (the helpers below read it): each subtest opens its own.
  let page!: Page;
  const fresh = async (t: Test) => {
    const opened = await chromium.open();
    t.teardown(opened.close);
    page = opened.page;
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (m) => { if (m.type() === 'error' && !/status of 40[14]/.test(m.text())) problems.push(`console: ${m.text()}`); });
    page.on('request', (r) => urls.push(r.url()));
  };
  const signedIn = async (t: Test, hash = '') => {
    await fresh(t);
    await signIn(page, url, ADMIN_TOKEN, hash);
  };
  const trackHash = `#/tracks/${encodeURIComponent('app/linux/arm64')}`;
  let pausedItself = false;
  let pausedByHand = false;
  const after = (what: string, done: boolean) => ({ skip: done ? false : `needs ${what}, which an earlier subtest failed to do` });
  const shot = (name: string, fullPage = true) => page.screenshot({ path: join(shots, `${name}.png`), fullPage });
  const text = (testId: string) => page.getByTestId(testId).innerText();

  await t.test('without a token the page shows sign-in and the admin API refuses every call', async (t) => {
    await fresh(t);
    await page.goto(`${url}/console/`);
    await page.getByLabel('Admin token').waitFor();
    t.equal(await page.evaluate<boolean>('document.activeElement?.id === "token"'), true, 'the token field has the focus');
    const statuses = await page.evaluate<number[]>(`Promise.all([
      fetch('/admin/artifacts'), fetch('/admin/fleet?artifact=app/linux/arm64'), fetch('/admin/devices'),
      fetch('/admin/devices/nobody'), fetch('/admin/rollout', { method: 'POST', body: '{"artifact":"app/linux/arm64","action":"pause"}' }),
    ].map((p) => p.then((r) => r.status)))`);
    for (const status of statuses) t.ok(status === 401 || status === 429, `refused with ${status}`);
    await shot('sign-in');

    await page.getByLabel('Admin token').fill('not-the-token-but-long-enough-0123456789');
    await page.keyboard.press('Enter');
    await page.getByText(/token was refused|Too many failed attempts/).waitFor();
    t.equal(await page.evaluate<number>('sessionStorage.length'), 0, 'a refused token is not kept');
  });

  await t.test('signing in shows the tracks', async (t) => {
    await fresh(t);
    await page.goto(`${url}/console/`);
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Tracks' }).waitFor();
    const row = page.getByRole('row', { name: /app\/linux\/arm64/ });
    await row.waitFor();
    t.match(await row.innerText(), /2\.0\.0[\s\S]*api[\s\S]*running/);
    t.match(await page.getByRole('row', { name: /sensor\/linux\/armv7/ }).innerText(), /3\.1\.0[\s\S]*default[\s\S]*config/);
    await shot('tracks');
  });

  await t.test('a rollout pauses itself when the simulated devices fail', async (t) => {
    await signedIn(t);
    await page.getByRole('row', { name: /app\/linux\/arm64/ }).waitFor();
    await tabTo(page, /^app\/linux\/arm64$/);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'app/linux/arm64', level: 1 }).waitFor();
    await page.getByRole('heading', { name: 'Rollout of 2.0.0' }).waitFor();
    t.equal(await text('rollout-state'), 'running');

    const node = nodeChild([UPDATER_BIN, 'load', '--url', url, '--admin-token-file', fixture.tokenPath,
      '--devices', '400', '--rate', '150', '--duration', '120s', '--old-share', '1', '--fail-rate', '0.6']);
    const load = spawn(node.command, node.args, { stdio: ['ignore', 'pipe', 'pipe'], env: node.env });
    let loadOutput = '';
    load.stdout.on('data', (d) => (loadOutput += d));
    load.stderr.on('data', (d) => (loadOutput += d));
    const loadEnded = new Promise((done) => load.once('exit', done));
    try {
      await page.getByTestId('rollout-state').filter({ hasText: 'paused' }).waitFor({ timeout: WAIT_MS });
    } finally {
      load.kill('SIGINT');
      await loadEnded;
    }
    t.match(await page.locator('.rollout').innerText(), /paused itself: too many failures/, loadOutput);
    t.match(await text('failure-rate'), /\d+ %[\s\S]*threshold 20 %/);
    t.ok(await page.locator('.chart canvas').count() > 0, 'the version chart is drawn');
    t.match(await page.getByRole('region', { name: 'Devices per version' }).innerText(), /2\.0\.0|1\.0\.0/);
    await shot('track-paused');
    pausedItself = t.passing();
  });

  await t.test('resume, see the percent move, pause by hand and set the percent', after('the rollout paused itself', pausedItself), async (t) => {
    await signedIn(t, trackHash);
    await page.getByTestId('rollout-state').filter({ hasText: 'paused' }).waitFor();
    const before = await text('rollout-percent');
    await tabTo(page, /^Resume$/);
    await page.keyboard.press('Enter');
    await page.getByTestId('rollout-state').filter({ hasText: 'running' }).waitFor();
    // Playwright's own wait, which looks again every half second, rather than an innerText call
    // every 100 ms: the step timer takes STEP_INTERVAL_S, and each look costs this process and
    // Chromium CPU. The same condition: any text but exactly the one before.
    const unchanged = new RegExp(`^${before.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&')}$`);
    await page.getByTestId('rollout-percent').filter({ hasNotText: unchanged }).waitFor({ timeout: STEP_INTERVAL_S * 3000 });
    t.not(await text('rollout-percent'), before);
    await shot('track-resumed');

    await tabTo(page, /^Pause$/);
    await page.keyboard.press('Enter');
    await page.getByTestId('rollout-state').filter({ hasText: 'paused' }).waitFor();
    t.match(await page.locator('.rollout').innerText(), /paused by an operator/);
    await tabTo(page, /Percent/);
    // Not one of the steps, so the timer can never have shown it before the operator set it.
    await page.keyboard.type('55');
    await page.keyboard.press('Enter');
    await page.getByTestId('rollout-percent').filter({ hasText: '55 %' }).waitFor();
    t.pass('set-percent reaches the server and shows');
    pausedByHand = t.passing();
  });

  await t.test('the failures and a device with its reports', after('the failures of the simulated devices', pausedItself), async (t) => {
    await signedIn(t);
    await page.getByRole('link', { name: 'Failures' }).click();
    const first = page.getByRole('table').getByRole('row').nth(1);
    await first.waitFor();
    t.match(await first.innerText(), /app\/linux\/arm64/);
    await shot('failures');
    const device = (await first.getByRole('link').first().innerText()).trim();
    await first.getByRole('link', { name: device }).click();
    await page.getByRole('heading', { name: device, level: 1 }).waitFor();
    await page.getByRole('heading', { name: 'Update reports' }).waitFor();
    t.match(await page.locator('main table').innerText(), /failure/);
    await shot('device');

    await page.getByRole('link', { name: 'Devices', exact: true }).first().click();
    await page.getByLabel('Track', { exact: true }).selectOption('app/linux/arm64');
    await page.getByRole('region', { name: 'Devices', exact: true }).getByText(/^load-/).first().waitFor();
    t.match(await page.getByRole('region', { name: 'Devices', exact: true }).innerText(), /app\/linux\/arm64/);
    await shot('devices', false);
    await page.getByLabel('Not seen for', { exact: true }).selectOption('1h');
    await page.getByText('No device matches.').waitFor();
    t.pass('every device was seen within the hour');
  });

  await t.test('abort with roll back, confirmed in a dialog', after('the rollout paused by hand', pausedByHand), async (t) => {
    await signedIn(t, trackHash);
    await page.getByRole('heading', { name: 'Rollout of 2.0.0' }).waitFor();
    await tabTo(page, /^Abort…$/);
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    t.equal(await text('rollout-state'), 'paused', 'Escape aborts nothing');
    await tabTo(page, /^Abort…$/);
    await page.keyboard.press('Enter');
    await dialog.getByLabel(/Roll back/).check();
    await dialog.getByRole('button', { name: 'Abort rollout' }).click();
    await page.getByTestId('rollout-state').filter({ hasText: 'aborted' }).waitFor();
    const fleet = await adminCall(url, 'GET', `/admin/fleet?artifact=${encodeURIComponent('app/linux/arm64')}`);
    t.match(fleet.json.rollout, { state: 'aborted', rollback: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await shot('track-phone');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  await t.test('sign out, and a token the server refuses returns to sign-in', async (t) => {
    await signedIn(t);
    await tabTo(page, /^Sign out$/);
    await page.keyboard.press('Enter');
    await page.getByLabel('Admin token').waitFor();
    t.equal(await page.evaluate<number>('sessionStorage.length'), 0, 'the token is forgotten');

    await page.evaluate(`sessionStorage.setItem('updater-admin-token', 'rotated-token-0123456789abcdefghijklmnop')`);
    await page.reload();
    await page.getByText(/refused the token|Too many failed attempts/).waitFor();
    t.equal(await page.evaluate<number>('sessionStorage.length'), 0);
  });

  t.same(problems, [], 'no script error and no CSP violation');
  t.notOk(urls.some((u) => u.includes(ADMIN_TOKEN)), 'the token never appears in a URL');
  t.notOk(urls.some((u) => !u.startsWith(url) && !u.startsWith('data:')), 'nothing is fetched from another origin');
  t.notOk(server.output().includes(ADMIN_TOKEN), 'the token never appears in the server log');
});
