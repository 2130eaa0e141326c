import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { toolPath } from './system-tool-list.js';

// Debian's Chromium driven by playwright-core, as an operator's browser: headless, a fresh
// profile per test, no network beyond what the page asks for (the test server on loopback).

export const CHROMIUM = toolPath('chromium') ?? '/usr/bin/chromium';

const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
  '--no-first-run', '--disable-component-update', '--disable-sync',
];

export interface Browser {
  readonly context: BrowserContext;
  readonly page: Page;
  close(): Promise<void>;
}

export async function openBrowser(viewport = { width: 1280, height: 800 }): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (.ci/run does)`);
  const profile = await mkdtemp(join(tmpdir(), 'updater-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, viewport, timeout: 60_000 });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close().catch(() => undefined);
      await rm(profile, { recursive: true, force: true });
    },
  };
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
