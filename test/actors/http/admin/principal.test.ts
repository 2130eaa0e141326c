import { timingSafeEqual } from 'node:crypto';
import t from 'tap';
import { AdminAuth } from '../../../../src/actors/http/admin/config-token.js';
import { CONFIG_PRINCIPAL, newOperatorToken, OperatorAuth, tokenHash } from '../../../../src/actors/http/admin/principal.js';
import { AdminAudit, audited } from '../../../../src/actors/http/admin/audit.js';
import type { AuditRecord, OperatorTokenEntry } from '../../../../src/messages/operators.js';
import { ADMIN_ROUTE_ROLES, roleAllows, roleDocTable, ROLES, routesOf } from '../../../../src/shared/admin-roles.js';
import { UpdaterError } from '../../../../src/shared/errors.js';

const CONFIGURED = 'a-valid-admin-token-of-more-than-32-chars';
const NOW_S = 1_800_000_000;

function entry(role: OperatorTokenEntry['role'], expiresAt: number | null = null) {
  const { id, token } = newOperatorToken();
  return { token, entry: { id, name: `ci-${role}`, role, hash: tokenHash(token), created_at: NOW_S - 10, expires_at: expiresAt } satisfies OperatorTokenEntry };
}

function setup(burst = 1000) {
  let compares = 0;
  const auth = new OperatorAuth(new AdminAuth(CONFIGURED, burst, 1, () => 0), () => NOW_S * 1000, (a, b) => {
    compares += 1;
    return timingSafeEqual(a, b);
  });
  return { auth, compares: () => compares };
}

t.test('the configured token is the admin role, named config', async (t) => {
  const { auth } = setup();
  t.same(auth.identify(`Bearer ${CONFIGURED}`), { principal: CONFIG_PRINCIPAL });
  t.equal(CONFIG_PRINCIPAL.role, 'admin');
});

t.test('an operator token is known by its whole secret, and a revoked or expired one is refused', async (t) => {
  const { auth } = setup();
  const publish = entry('publish');
  const expired = entry('admin', NOW_S);
  auth.replace({ version: 'v1', tokens: [publish.entry, expired.entry] });
  const ok = auth.identify(`Bearer ${publish.token}`);
  t.same(ok, { principal: { id: publish.entry.id, name: 'ci-publish', role: 'publish', expiresAt: null } });

  const tampered = publish.token.slice(0, -1) + (publish.token.endsWith('A') ? 'B' : 'A');
  t.match(auth.identify(`Bearer ${tampered}`), { refused: 'unauthorized' }, 'one character of the secret changed');
  t.match(auth.identify(`Bearer ${expired.token}`), { refused: 'unauthorized', detail: /expired/ }, 'expired at this second');

  auth.removed(publish.entry.id);
  t.match(auth.identify(`Bearer ${publish.token}`), { refused: 'unauthorized' }, 'revoked');
  t.notOk('principal' in auth.identify(`Bearer ${publish.token}`), 'no principal for it');
});

t.test('every failure drains the one bucket, whichever kind of token failed', async (t) => {
  const { auth } = setup(3);
  const revoked = entry('read');
  t.match(auth.identify(`Bearer ${revoked.token}`), { refused: 'unauthorized' });
  t.match(auth.identify('Bearer upd_0000000000000000_' + 'x'.repeat(43)), { refused: 'unauthorized' });
  t.match(auth.identify(''), { refused: 'unauthorized' });
  t.match(auth.identify(`Bearer ${revoked.token}`), { refused: 'throttled' }, 'the fourth failure finds the bucket empty');
  t.same(auth.identify(`Bearer ${CONFIGURED}`), { principal: CONFIG_PRINCIPAL }, 'the configured token still passes');
});

t.test('an operator token is compared in constant time on every path: malformed, unknown id, wrong secret, right secret', async (t) => {
  const { auth, compares } = setup();
  const read = entry('read');
  auth.replace({ version: 'v1', tokens: [read.entry] });
  const wrongSecret = `upd_${read.entry.id}_${'A'.repeat(43)}`;
  const unknownId = `upd_ffffffffffffffff_${'A'.repeat(43)}`;
  for (const presented of ['garbage', unknownId, wrongSecret, read.token]) {
    const before = compares();
    auth.identify(`Bearer ${presented}`);
    t.equal(compares() - before, 1, `one comparison of 32-byte digests for ${presented.slice(0, 24)}…`);
  }
});

t.test('the role table: read is every role\'s, publish and operate are their own and admin\'s, admin only admin\'s', async (t) => {
  t.same(ROLES.filter((r) => roleAllows(r, 'read')), ['read', 'publish', 'operate', 'admin']);
  t.same(ROLES.filter((r) => roleAllows(r, 'publish')), ['publish', 'admin']);
  t.same(ROLES.filter((r) => roleAllows(r, 'operate')), ['operate', 'admin']);
  t.same(ROLES.filter((r) => roleAllows(r, 'admin')), ['admin']);
  for (const row of ADMIN_ROUTE_ROLES) {
    if (row.method === 'GET' && !row.path.startsWith('/admin/tokens')) t.equal(row.role, 'read', `${row.method} ${row.path}: every GET but tokens is read`);
  }
  t.notOk(routesOf('read').some((r) => r.startsWith('GET /admin/tokens')), 'a read token may not list tokens');
  t.equal(routesOf('admin').length, ADMIN_ROUTE_ROLES.length);
  t.equal(roleDocTable().split('\n').length, ADMIN_ROUTE_ROLES.length + 2, 'one docs line per route');
  const keys = ADMIN_ROUTE_ROLES.map((r) => `${r.method} ${r.path}`);
  t.equal(new Set(keys).size, keys.length, 'no route has two rows');
});

t.test('the audit keeps changes and refusals, and writes a flood of 429s as one row a second', async (t) => {
  t.equal(audited('GET', 200), false);
  t.equal(audited('GET', 404), false);
  for (const status of [401, 403, 429]) t.equal(audited('GET', status), true, `a GET refused with ${status}`);
  t.equal(audited('POST', 400), true, 'a change refused for its body');
  const sent: AuditRecord[] = [];
  const audit = new AdminAudit({ send: async (rows) => void sent.push(...rows), begin: async () => 1, end: async () => undefined }, undefined, () => NOW_S * 1000);
  for (let i = 0; i < 1000; i++) audit.record(null, 'GET', '/admin/artifacts', 429, 'unknown, revoked or malformed token');
  audit.record(CONFIG_PRINCIPAL, 'POST', '/admin/gc', 200, '');
  audit.flush(true);
  t.equal(sent.length, 3, 'one row for the change, the first 429 as it came, one row for the 999 after it');
  const throttled = sent.filter((r) => r.status === 429);
  t.equal(throttled[0]!.detail, 'unknown, revoked or malformed token');
  t.match(throttled[1]!.detail, /^999 requests refused with 429 within a second/);
  t.same(sent.find((r) => r.status === 200), { at: NOW_S, token_id: 'config', token_name: 'config', role: 'admin', method: 'POST', path: '/admin/gc', status: 200, detail: '' });
});

t.test('audit rows that cannot be handed over are counted as lost, and nothing is left unhandled', async (t) => {
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  t.teardown(() => void process.off('unhandledRejection', onUnhandled));
  let away = true;
  const hand = async () => {
    if (away) throw new UpdaterError('ACTOR_TIMEOUT', 'fleet audit did not answer within 5000 ms');
  };
  const told: string[] = [];
  const audit = new AdminAudit({ send: hand, begin: async () => 1, end: hand }, {
    lost: (rows, _err, first) => told.push(`lost ${rows}${first ? ' first' : ''}`),
    recovered: () => told.push('recovered'),
  }, () => NOW_S * 1000);
  const settled = () => new Promise((r) => setImmediate(r));
  audit.record(null, 'GET', '/admin/devices', 401, 'no token');
  audit.record(null, 'GET', '/admin/audit', 401, 'no token');
  audit.flush();
  await settled();
  audit.end(7, 200, 'published');
  await settled();
  away = false;
  audit.record(null, 'GET', '/admin/devices', 401, 'no token');
  audit.flush();
  await settled();
  t.same(told, ['lost 2 first', 'lost 1', 'recovered'], 'two refusals lost together, then a change\'s answer; then they go through again');
  t.same(unhandled, [], 'no rejection was left unhandled');
});
