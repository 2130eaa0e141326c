import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { toolPath } from './system-tool-list.js';

// Debian's Chromium driven by playwright-core, as an operator's browser: headless, no network
// beyond what the page asks for (the test server on loopback). One Chromium per test file,
// and a fresh context (cookies, storage, tabs) for each subtest that signs in: a subtest that
// fails half-way leaves its session behind in its own context, not in the next subtest's page,
// so one failure is reported once rather than again by every subtest after it.

export const CHROMIUM = toolPath('chromium') ?? '/usr/bin/chromium';

// Chromium 156 builds the omnibox popup of every window (one per context here) as WebUI
// pages in a renderer of their own: about a second of CPU per context, for a popup no test
// opens. Chromium keeps only the last --disable-features, so Playwright's own list
// (chromiumSwitches.ts of the playwright-core this was copied from) is repeated with them;
// with another playwright-core its own list is left alone and the popups stay.
const PLAYWRIGHT_WITH_THIS_LIST = '1.65.1';
const playwrightVersion = (createRequire(import.meta.url)('playwright-core/package.json') as { version: string }).version;
const PLAYWRIGHT_DISABLED_FEATURES = [
  'AvoidUnnecessaryBeforeUnloadCheckSync', 'DestroyProfileOnBrowserClose', 'HttpsUpgrades', 'HttpsFirstBalancedModeAutoEnable',
  'LensOverlay', 'MediaRouter', 'PaintHolding', 'ThirdPartyStoragePartitioning', 'AvoidCorsURLLoaderRestartOnRedirect',
  'TcpPortRandomizationWin', 'OptimizationHints', 'NetworkTimeServiceQuerying', 'AimEnabled', 'PreconnectToSearch',
  'msForceBrowserSignIn', 'msEdgeUpdateLaunchServicesPreferredVersion',
];
const OMNIBOX_POPUPS = ['WebUIOmniboxPopup', 'WebUIOmniboxAimPopup', 'WebUIOmniboxFullPopup'];

const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
  '--no-first-run', '--disable-component-update', '--disable-sync',
  ...(playwrightVersion === PLAYWRIGHT_WITH_THIS_LIST ? [`--disable-features=${[...PLAYWRIGHT_DISABLED_FEATURES, ...OMNIBOX_POPUPS].join(',')}`] : []),
];

const VIEWPORT = { width: 1280, height: 800 };

export interface Browser {
  readonly context: BrowserContext;
  readonly page: Page;
  close(): Promise<void>;
}

export interface Chromium {
  /** A new context with one page: nothing of any other context's session is in it. */
  open(viewport?: { width: number; height: number }): Promise<Browser>;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Chromium> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (.ci/run does)`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 60_000 });
  return {
    async open(viewport = VIEWPORT) {
      const context = await browser.newContext({ viewport });
      const page = await context.newPage();
      return { context, page, close: () => context.close().catch(() => undefined) };
    },
    close: () => browser.close().catch(() => undefined),
  };
}

/** One Chromium with one context, for a test that needs a single page. */
export async function openBrowser(viewport = VIEWPORT): Promise<Browser> {
  const browser = await launchChromium();
  const { context, page } = await browser.open(viewport);
  return { context, page, close: () => browser.close() };
}

// The focused element's accessible-ish name. A string, because this file is compiled without
// the DOM library: it runs in the page, not here.
const FOCUSED_LABEL = `(() => {
  const el = document.activeElement;
  if (!el) return '';
  const labels = el.labels ? [...el.labels].map((l) => l.textContent).join(' ') : '';
  return [el.getAttribute('aria-label') || '', el.textContent || '', labels].join(' ').trim();
})()`;

/**
 * Presses Tab until the focused element's text (or label) matches `name`, then returns: the
 * way a keyboard user reaches a control. Fails when it is not reachable within `limit` tabs.
 */
export async function tabTo(page: Page, name: RegExp, limit = 60): Promise<void> {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press('Tab');
    const label = await page.evaluate<string>(FOCUSED_LABEL);
    if (name.test(label)) return;
  }
  throw new Error(`${name} was not reached with ${limit} presses of Tab`);
}

/**
 * Signs `page` in to the console at `url` with `token`, starting at `hash` (a view's route,
 * '' for the tracks): resolves once the signed-in frame shows who is signed in.
 */
export async function signIn(page: Page, url: string, token: string, hash = ''): Promise<void> {
  await page.goto(`${url}/console/${hash}`);
  await page.getByLabel('Admin token').fill(token);
  await page.keyboard.press('Enter');
  await page.getByTestId('signed-in-as').waitFor();
}
