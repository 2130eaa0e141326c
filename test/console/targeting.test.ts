import { mkdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { openBrowser } from '../helpers/browser.js';
import { ADMIN_TOKEN, firmware, makeFixture, nextVersion, randomHash } from '../helpers/fixture.js';
import { postJson } from '../helpers/http.js';
import { localClock } from '../helpers/local-time.js';
import { REPO_ROOT, startTestServer } from '../helpers/server.js';
import { needs } from '../helpers/system-tools.js';

// The targeting screens in Debian's Chromium, as a newcomer does the canary-then-5 % example
// of docs/rollouts.md in the console alone: a group, a device's tags, the member count and
// list, a publish with a group step, manual steps and a window in device time, the heartbeats
// it decides (the canary device offered the build inside its window, not outside it, the
// field device not at all), "advance", a scheduled publish, and a group the server refuses to
// delete while a rollout names it.

t.setTimeout(300_000);

t.test('an operator targets a rollout in the console', needs('chromium'), async (t) => {
  const fixture = await makeFixture('updater-console-targeting-');
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(20_000, 'ct-v1'));
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(await readFile(v1.path), 'ct-v2'));
  const v3 = await fixture.writeBinary('v3.bin', nextVersion(await readFile(v2.path), 'ct-v3'));
  const server = await startTestServer(fixture, [], { fleet: { flush_interval: '100ms' } });
  t.teardown(() => server.stop());
  const url = server.url;
  t.equal((await adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '1.0.0', binary: v1.path })).status, 200);
  const beatOf = (id: string, versionHash: string) => ({ device_id: id, version_hash: versionHash, version: '0.9', hw_info: { arch: 'a', os: 'o', free_ram: 1, free_disk: 1 }, timestamp: 1, artifact: 'app' });
  for (const [id, site] of [['lab-1', 'lab'], ['field-1', 'berlin']] as const) {
    t.equal((await postJson(`${url}/heartbeat`, { ...beatOf(id, randomHash()), attributes: { site, tz: 'Europe/Berlin' } })).status, 200);
  }
  await eventually('both devices stored', () => adminCall(url, 'GET', '/admin/devices'), (a) => a.json.devices?.length === 2);

  const browser = await openBrowser();
  t.teardown(() => browser.close());
  const { page } = browser;
  // Screenshots for docs/console.md with UPDATER_CONSOLE_SCREENSHOTS=docs/console, else a temp directory.
  const shots = process.env.UPDATER_CONSOLE_SCREENSHOTS ? resolve(REPO_ROOT, process.env.UPDATER_CONSOLE_SCREENSHOTS) : join(fixture.dir, 'shots');
  await mkdir(shots, { recursive: true });
  const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  await page.goto(`${url}/console/`);
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Tracks' }).waitFor();

  // A group, empty at first.
  await page.getByRole('link', { name: 'Groups' }).click();
  await page.getByRole('heading', { name: 'Groups', exact: true }).waitFor();
  await page.getByLabel('Name').fill('canary');
  await page.getByLabel('Filter (JSON)').fill('{"tags":["canary"]}');
  await page.getByRole('button', { name: 'Save group' }).click();
  await page.getByText('Group canary saved: 0 devices now.').waitFor();

  // Tag the lab device on its page; its attributes are shown.
  await page.goto(`${url}/console/#/devices/lab-1`);
  await page.getByRole('heading', { name: 'Tags and attributes' }).waitFor();
  t.match(await page.getByTestId('device-attributes').innerText(), /site=lab/);
  await page.getByLabel('Tags (space or comma separated)').fill('canary lab');
  await page.getByRole('button', { name: 'Save tags' }).click();
  await page.getByText('Tags saved: canary, lab.').waitFor();
  await shot('device-tags');
  t.same((await adminCall(url, 'GET', '/admin/devices/lab-1')).json.tags, ['canary', 'lab']);

  // The group counts it now, and its link lists it.
  await page.getByRole('link', { name: 'Groups' }).click();
  await page.getByTestId('group-row').waitFor();
  const row = page.getByTestId('group-row').filter({ hasText: 'canary' });
  await row.getByRole('link', { name: '1' }).waitFor();
  await shot('groups');
  await row.getByRole('link', { name: '1' }).click();
  await page.getByTestId('group-filter').waitFor();
  await page.getByRole('link', { name: 'lab-1' }).waitFor();
  t.equal(await page.getByRole('link', { name: 'field-1' }).count(), 0, 'only members are listed');

  // Publish with the canary step, then 5 %, manual steps, a night window in device time.
  await page.goto(`${url}/console/#/tracks/app`);
  await page.getByRole('heading', { name: 'Publish a new build' }).waitFor();
  await page.getByLabel('Version', { exact: true }).fill('2.0.0');
  await page.getByLabel('Binary path on the server, or the hash of an uploaded binary').fill(v2.path);
  await page.getByLabel('Steps: group names and rising percents ending at 100').fill('canary, 5, 100');
  await page.getByLabel('Step interval ("manual": advance by hand)').fill('manual');
  await page.getByLabel('From').fill('02:00');
  await page.getByLabel('To').fill('04:00');
  await shot('publish');
  // The screenshot shows the night window of the docs' example; the rollout gets one open now
  // in Berlin (two hours either side of the current minute: no boundary can close it while the
  // test runs), so that the decision can be seen in place.
  const [from, to] = [localClock('Europe/Berlin', -120), localClock('Europe/Berlin', 120)];
  await page.getByLabel('From').fill(from);
  await page.getByLabel('To').fill(to);
  await page.getByRole('button', { name: 'Publish' }).click();
  await page.getByText('Published 2.0.0 with a rollout.').waitFor();
  await page.getByTestId('rollout-window').waitFor();
  t.match(await page.getByTestId('rollout-steps').innerText(), /group canary → 5 % → 100 %, advanced by hand/);
  t.match(await page.getByTestId('rollout-window').innerText(), `every day ${from}–${to}, each device's own time`);
  t.match((await adminCall(url, 'GET', '/admin/fleet?artifact=app')).json.rollout, { steps: [{ group: 'canary' }, 5, 100], step: 0, window: { start: from, end: to, tz: 'device' } });

  // The decision in place: the canary lab device is offered 2.0.0 while the window is open in
  // its zone, and told when to come back when its zone puts it outside; the field device is not
  // in the canary group and stays on 1.0.0.
  const onV1 = (id: string, tz: string) => postJson(`${url}/heartbeat`, { ...beatOf(id, v1.hash), attributes: { site: id === 'lab-1' ? 'lab' : 'berlin', tz } });
  t.match((await onV1('lab-1', 'Europe/Berlin')).json, { update_available: true, target_version: '2.0.0' }, 'lab-1, window open in Berlin: offered 2.0.0');
  const elsewhere = (await onV1('lab-1', 'Asia/Tokyo')).json;
  t.match(elsewhere, { update_available: false }, 'lab-1 saying it is in Tokyo, where the window is closed: no update');
  t.ok(elsewhere.retry_after > 10 * 3600 && elsewhere.retry_after <= 18 * 3600, `retry_after ${elsewhere.retry_after} s: until the window opens in Tokyo`);
  t.match((await onV1('lab-1', 'Europe/Berlin')).json, { update_available: true, target_version: '2.0.0' }, 'back in Berlin: offered 2.0.0 again');
  const field = (await onV1('field-1', 'Europe/Berlin')).json;
  t.match(field, { update_available: false, target_version: '1.0.0' }, 'field-1, untagged: stays on 1.0.0');
  t.notOk('retry_after' in field, 'and it is not waiting for a window');

  // The server refuses to delete the group while the rollout names it; the console says why.
  await page.getByRole('link', { name: 'Groups' }).click();
  page.once('dialog', (dialog) => void dialog.accept());
  await page.getByRole('button', { name: 'Delete canary' }).click();
  await page.getByText(/GROUP_IN_USE/).waitFor();

  // Advance to 5 %.
  await page.goto(`${url}/console/#/tracks/app`);
  await page.getByRole('button', { name: 'Advance to the next step' }).click();
  await page.getByText('Rollout advanced to its next step.').waitFor();
  await eventually('at 5 %', async () => (await adminCall(url, 'GET', '/admin/fleet?artifact=app')).json.rollout, (r) => r.step === 1 && r.percent === 5, 5_000);

  // A bad step is refused with the server's words, naming the field.
  await page.getByLabel('Version', { exact: true }).fill('3.0.0');
  await page.getByLabel('Binary path on the server, or the hash of an uploaded binary').fill(v3.path);
  await page.getByLabel('Steps: group names and rising percents ending at 100').fill('nobody, 100');
  await page.getByRole('button', { name: 'Publish' }).click();
  await page.getByText(/rollout\.steps\[0\]\.group names "nobody"/).waitFor();

  // A start time tomorrow: the rollout says it is scheduled and when it starts.
  const tomorrow = new Date(Date.now() + 86_400_000);
  const local = new Date(tomorrow.getTime() - tomorrow.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
  await page.getByLabel('Steps: group names and rising percents ending at 100').fill('5, 100');
  await page.getByLabel('Step interval ("manual": advance by hand)').fill('1h');
  await page.getByLabel("Start time (your browser's time zone; empty: at once)").fill(local);
  await page.getByRole('button', { name: 'Publish' }).click();
  await page.getByTestId('rollout-starts').waitFor();
  t.match(await page.getByTestId('rollout-state').innerText(), /scheduled/);
  await shot('track-scheduled');
  t.match((await adminCall(url, 'GET', '/admin/fleet?artifact=app')).json.rollout, { state: 'scheduled', percent: 0 });
  t.same(problems, [], 'no script errors');
});
