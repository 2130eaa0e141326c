import { build } from 'esbuild';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { REPO_ROOT } from '../helpers/server.js';

// The console's pure pieces (formatting, version labels, hash routes), bundled by
// esbuild as the page's build does and run here without a browser.

async function load<T>(entry: string, dir: string): Promise<T> {
  const outfile = join(dir, `${entry.replace(/\W/g, '_')}.mjs`);
  await build({ entryPoints: [join(REPO_ROOT, 'console', 'src', entry)], bundle: true, format: 'esm', platform: 'neutral', outfile, logLevel: 'error' });
  return import(pathToFileURL(outfile).href) as Promise<T>;
}

// The page's modules are compiled by esbuild, not by this project's tsc (they use the DOM
// library): their shapes are restated here.
interface Format {
  bytes(n: number | undefined): string;
  relativeTime(seconds: number, nowMs: number): string;
  percent(fraction: number): string;
  versionLabels(versions: { version_hash: string; version: string }[], known: Record<string, string>): Map<string, string>;
}
interface Router {
  href(parts: string[], params?: Record<string, string>): string;
  parseHash(hash: string): { parts: string[]; params: URLSearchParams };
}

t.test('formatting, labels and routes', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'updater-console-logic-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const format = await load<Format>('format.ts', dir);
  const router = await load<Router>('router.ts', dir);

  t.test('sizes, times and durations read as an operator expects', async (t) => {
    t.equal(format.bytes(512), '512 B');
    t.equal(format.bytes(52_000_000), '50 MiB');
    t.equal(format.bytes(1536), '1.5 KiB');
    t.equal(format.bytes(undefined), '—');
    t.equal(format.relativeTime(1000 - 90, 1000_000), '1 min ago');
    t.equal(format.relativeTime(1000 + 40, 1000_000), 'in 40 s');
    t.equal(format.relativeTime(1000 - 3 * 86400, 1000_000), '3 d ago');
    t.equal(format.percent(0.25), '25 %');
    t.equal(format.percent(0.05), '5.0 %');
  });

  t.test('version labels prefer what the server published and tell equal names apart', async (t) => {
    const a = 'a'.repeat(64);
    const b = 'b'.repeat(64);
    const c = 'c'.repeat(64);
    const labels = format.versionLabels([{ version_hash: a, version: '1.0.0' }, { version_hash: b, version: '1.0.0' }, { version_hash: c, version: '' }], { [a]: '2.0.0' });
    t.equal(labels.get(a), '2.0.0');
    t.equal(labels.get(b), '1.0.0');
    t.equal(labels.get(c), 'unknown cccccc');
    const same = format.versionLabels([{ version_hash: a, version: '1.0.0' }, { version_hash: b, version: '1.0.0' }], {});
    t.same([same.get(a), same.get(b)], ['1.0.0 aaaaaa', '1.0.0 bbbbbb']);
  });

  t.test('hash routes round-trip track keys and device ids with slashes and spaces', async (t) => {
    const link = router.href(['tracks', 'app/linux/arm64']);
    t.equal(link, '#/tracks/app%2Flinux%2Farm64');
    t.same(router.parseHash(link).parts, ['tracks', 'app/linux/arm64']);
    const devices = router.parseHash(router.href(['devices'], { artifact: 'app', not_seen: '1h', after: '' }));
    t.same(devices.parts, ['devices']);
    t.equal(devices.params.get('not_seen'), '1h');
    t.equal(devices.params.has('after'), false, 'empty values are left out');
    t.same(router.parseHash('#/devices/dev%20one').parts, ['devices', 'dev one']);
    t.same(router.parseHash('').parts, []);
    t.same(router.parseHash('#/devices/%E0%A4%A').parts, ['devices', '%E0%A4%A'], 'bad escapes stay as typed');
  });
});

interface Targeting {
  parseSteps(text: string): unknown[];
  stepsText(steps: unknown[]): string;
  parseTags(text: string): string[];
  startAtSeconds(local: string): number | undefined;
  windowBody(fields: { days: string[]; start: string; end: string; tz: string }): Record<string, unknown> | undefined;
  trackFields(artifact: string): Record<string, string>;
}

t.test('the targeting forms turn text into API bodies', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'updater-console-targeting-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const m = await load<Targeting>('targeting.ts', dir);
  t.same(m.parseSteps('canary, 5, 25 %, 100'), [{ group: 'canary' }, 5, 25, 100]);
  t.same(m.parseSteps(' canary → 5 → 100 '), [{ group: 'canary' }, 5, 100]);
  t.equal(m.stepsText([{ group: 'canary' }, 5, 100]), 'canary, 5, 100');
  t.same(m.parseTags('lab, canary  lab'), ['canary', 'lab']);
  t.same(m.parseTags(''), []);
  t.equal(m.startAtSeconds(''), undefined);
  t.equal(m.startAtSeconds('2026-12-05T01:00:00Z'), 1796432400);
  t.equal(m.windowBody({ days: [], start: '', end: '', tz: '' }), undefined, 'no window');
  t.same(m.windowBody({ days: ['sat', 'sun'], start: '02:00', end: '04:00', tz: '' }), { days: ['sat', 'sun'], start: '02:00', end: '04:00', tz: 'device' });
  t.same(m.windowBody({ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '02:00', end: '04:00', tz: 'UTC' }), { start: '02:00', end: '04:00', tz: 'UTC' }, 'every day is the default');
  t.same(m.trackFields('app/linux/arm64'), { name: 'app', os: 'linux', arch: 'arm64' });
  t.same(m.trackFields('app'), { name: 'app' });
});
