import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { RENEW_AT } from '../../src/actors/manifester/release-statements.js';
import { ReleaseStatements } from '../../src/actors/manifester/release-statements.js';
import { REPO_ROOT } from '../helpers/server.js';

// Issue 36, item 8: the docs said a release statement is signed again before a half of its life
// in one place and before a third in another. The code renews at RENEW_AT (35 %) and its timer
// looks every tenth of the life: one rule, "once 35 % has passed, always before half", which every
// doc must state and none contradict.

t.test('the renewal rule the docs state is the one the code follows', async (t) => {
  t.equal(RENEW_AT, 0.35);
  // A 100 s life: the timer looks every 10 s; a statement signed at 0 is renewed at the first look past 35 s.
  let now = 0;
  const signed: number[] = [];
  const statements = new ReleaseStatements(new Uint8Array(32).fill(7), 100, { signed: () => signed.push(now) }, () => now);
  statements.sync([{ key: 'app', name: 'app', os: '', arch: '', version: '1', hash: 'c'.repeat(64), size: 1, source: 'api', binary: '/x', history: [], sequence: 1 } as never]);
  t.equal(statements.renewalPeriodMs, 10_000);
  const renewedAt: number[] = [];
  for (now = 10_000; now <= 100_000 && renewedAt.length === 0; now += statements.renewalPeriodMs) if (statements.renew() > 0) renewedAt.push(now);
  t.ok(renewedAt[0]! >= 35_000 && renewedAt[0]! < 50_000, `renewed at ${renewedAt[0]} ms of a 100 s life: past 35 %, before half`);
});

t.test('every doc states that rule and none another', async (t) => {
  const files = [join(REPO_ROOT, 'README.md'), ...(await readdir(join(REPO_ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => join(REPO_ROOT, 'docs', f))];
  const text = (await Promise.all(files.map((f) => readFile(f, 'utf8')))).join('\n');
  t.notMatch(text, /(third|quarter) of (its|their) life/i, 'no doc names another share of the life');
  const protocol = await readFile(join(REPO_ROOT, 'docs', 'protocol.md'), 'utf8');
  t.match(protocol, /again once 35 % of its life has passed, always before half of it has/, 'protocol.md states the rule');
  const configuration = await readFile(join(REPO_ROOT, 'docs', 'configuration.md'), 'utf8');
  t.match(configuration, /signed again once 35 % of it has passed, always before half of it has/, 'configuration.md states the rule');
});
