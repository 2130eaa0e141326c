import { build } from 'esbuild';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { openBrowser } from '../helpers/browser.js';
import { REPO_ROOT } from '../helpers/server.js';
import { needs } from '../helpers/system-tools.js';

// The console's router in Debian's Chromium, with Preact's effects held: a hash change that
// lands after the first render and before the subscription effect runs (an operator following
// a deep link while a slow first render runs; a test's page.goto('#/…') on a loaded machine)
// must still reach the view. Holding the effect queue through Preact's own hook
// (options.requestAnimationFrame, which schedules the effects' flush) puts the change in that
// gap every time, whatever the machine's pace.

// A page with one component that shows its route; the effects wait until the test flushes them.
const PROBE = `
import { h, options, render } from 'preact';
import { useRoute } from './router.ts';
const held = [];
options.requestAnimationFrame = (flush) => { held.push(flush); };
window.heldEffects = () => held.length;
window.flushEffects = () => { for (const flush of held.splice(0)) flush(); };
function Probe() {
  const route = useRoute();
  return h('p', { id: 'route' }, route.parts.join('/') || '(tracks)');
}
render(h(Probe), document.getElementById('root'));
`;

// Settles Preact's re-render (a microtask) and the browser's task queue, so what the page shows
// after it is what it will keep showing.
const SHOWN = `new Promise((done) => setTimeout(() => done(document.getElementById('route').textContent)))`;

t.test('a hash change between the first render and the subscription reaches the view', needs('chromium'), async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'updater-console-router-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await build({
    stdin: { contents: PROBE, resolveDir: join(REPO_ROOT, 'console', 'src'), loader: 'js' },
    bundle: true, format: 'iife', outfile: join(dir, 'probe.js'), logLevel: 'error',
  });
  await writeFile(join(dir, 'index.html'), '<!doctype html><div id="root"></div><script src="probe.js"></script>\n');

  const browser = await openBrowser();
  t.teardown(() => browser.close());
  const { page } = browser;
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  await page.goto(pathToFileURL(join(dir, 'index.html')).href);

  t.equal(await page.evaluate<string>(SHOWN), '(tracks)', 'the first render shows the route of the URL it opened at');
  t.equal(await page.evaluate<number>('heldEffects()'), 1, 'and the subscription effect has not run yet');
  // Resolves once the browser has dispatched the hashchange event to every listener it has.
  await page.evaluate(`new Promise((done) => {
    addEventListener('hashchange', () => done(), { once: true });
    location.hash = '#/tracks/app%2Flinux%2Farm64';
  })`);
  await page.evaluate('flushEffects()');
  t.equal(await page.evaluate<string>(SHOWN), 'tracks/app/linux/arm64', 'the change made before the subscription is shown');

  await page.evaluate(`location.hash = '#/audit'`);
  await page.waitForFunction(`document.getElementById('route').textContent === 'audit'`, undefined, { timeout: 10_000 });
  t.pass('later changes reach the view through the subscription');
  t.same(problems, [], 'no page errors');
});
