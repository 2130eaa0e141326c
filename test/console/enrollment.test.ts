import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { openBrowser } from '../helpers/browser.js';
import { authHttp, TestDevice } from '../helpers/device-auth.js';
import { ADMIN_TOKEN, firmware, makeFixture } from '../helpers/fixture.js';
import { startTestServer } from '../helpers/server.js';

// The console's enrollment page in Debian's Chromium: two devices wait with their keys, the
// operator accepts one and rejects the other, and the device page shows the state and the
// key's fingerprint; then a burst of pending devices is deleted with one bulk action.

t.setTimeout(300_000);

t.test('an operator accepts and rejects pending devices in the console', async (t) => {
  const fixture = await makeFixture('updater-console-enroll-');
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(5_000, 'enroll-console'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: v1.path }], { devices: { auth: 'on', enrollment: 'manual' } });
  t.teardown(() => server.stop());
  const good = new TestDevice('factory-0001');
  const odd = new TestDevice('factory-0002');
  t.equal((await authHttp(server.url, good.request())).status, 202);
  t.equal((await authHttp(server.url, odd.request())).status, 202);
  const goodKey = good.request().publicKey;

  const browser = await openBrowser();
  t.teardown(() => browser.close());
  const { page } = browser;
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  await page.goto(`${server.url}/console/`);
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Tracks' }).waitFor();
  await page.getByRole('link', { name: 'Enrollment' }).click();
  await page.getByRole('heading', { name: 'Pending devices' }).waitFor();
  const goodRow = page.getByRole('row', { name: /factory-0001/ });
  await goodRow.waitFor();
  t.match(await goodRow.innerText(), new RegExp(goodKey.slice(0, 4) + ':' + goodKey.slice(4, 8)), 'the row shows the key fingerprint');

  await page.getByRole('button', { name: 'Accept factory-0001' }).click();
  await page.getByText('factory-0001 accepted.').waitFor();
  await page.getByRole('button', { name: 'Reject factory-0002' }).click();
  await page.getByText('factory-0002 rejected.').waitFor();
  await page.getByText('No device is waiting.').waitFor();
  await eventually('the server has both decisions', async () => [
    (await adminCall(server.url, 'GET', '/admin/devices/factory-0001')).json.auth_state,
    (await adminCall(server.url, 'GET', '/admin/devices/factory-0002')).json.auth_state,
  ], (states) => states[0] === 'accepted' && states[1] === 'rejected', 5_000);
  t.equal((await authHttp(server.url, good.request())).status, 200, 'the accepted device gets its token');

  // A burst: every pending device whose id begins with "burst-" goes in one action.
  for (const id of ['burst-1', 'burst-2', 'keep-1']) t.equal((await authHttp(server.url, new TestDevice(id).request())).status, 202);
  await page.reload();
  await page.getByRole('row', { name: /burst-2/ }).waitFor();
  page.once('dialog', (dialog) => void dialog.accept());
  await page.getByLabel('Id prefix (empty: all)').fill('burst-');
  await page.getByRole('button', { name: 'Delete all pending' }).click();
  await page.getByText('2 pending devices deleted.').waitFor();
  await page.getByRole('row', { name: /burst-1/ }).waitFor({ state: 'detached' });
  t.same((await adminCall(server.url, 'GET', '/admin/devices?auth_state=pending')).json.devices.map((d: any) => d.device_id), ['keep-1'], 'the bulk delete took the burst only');

  await page.goto(`${server.url}/console/#/devices/factory-0001`);
  await page.getByRole('heading', { name: 'factory-0001' }).waitFor();
  await page.getByText('accepted', { exact: true }).waitFor();
  t.ok(await page.getByText(`${goodKey.slice(0, 4)}:${goodKey.slice(4, 8)}:${goodKey.slice(8, 12)}:${goodKey.slice(12, 16)}`).isVisible(), 'the device page shows the key fingerprint');
  t.same(problems, [], 'no page errors');
});
