import t from 'tap';
import { ADMIN_ROUTE_ROLES, roleAllows, ROLES, type Role } from '../../src/shared/admin-roles.js';
import { adminCall, eventually } from '../helpers/admin.js';
import { createTestDatabase, ENGINES } from '../helpers/databases.js';
import { ADMIN_TOKEN, firmware, makeFixture } from '../helpers/fixture.js';
import { startTestServer } from '../helpers/server.js';

// Operator tokens and roles against a real server over loopback, on SQLite and PostgreSQL:
// the whole role matrix (every admin route × every role, walked from the route table, so a
// route added without a row fails here), and the attacks: a stolen read token trying to
// publish, a revoked token, an expired token, and brute force still meeting 429.

/** A request a route takes without changing anything that matters here: bodies are `{}`. */
function sample(path: string): string {
  return path.replace(':id', '0000000000000000');
}

for (const engine of ENGINES) {
  t.test(`${engine}: tokens with roles`, async (t) => {
    const fixture = await makeFixture('updater-roles-');
    t.teardown(() => fixture.cleanup());
    const database = await createTestDatabase(engine, fixture.dir);
    t.teardown(() => database.drop());
    const binary = await fixture.writeBinary('app.bin', firmware(20_000, `roles-${engine}`));
    const server = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: binary.path }], {
      database: database.location,
      admin: { token_file: fixture.tokenPath, auth_failure_burst: 5 },
    });
    t.teardown(() => server.stop());
    const url = server.url;

    const tokens = {} as Record<Role, string>;
    const ids = {} as Record<Role, string>;
    for (const role of ROLES) {
      const created = await adminCall(url, 'POST', '/admin/tokens', { name: `ci-${role}`, role });
      t.equal(created.status, 201, JSON.stringify(created.json));
      t.match(created.json, { id: /^[0-9a-f]{16}$/, name: `ci-${role}`, role, token: /^upd_/, expires_at: null });
      tokens[role] = created.json.token;
      ids[role] = created.json.id;
    }

    await t.test('the list shows every token and never a secret', async (t) => {
      const listed = await adminCall(url, 'GET', '/admin/tokens');
      t.equal(listed.status, 200);
      t.same(listed.json.tokens.map((x: any) => x.name).sort(), ROLES.map((r) => `ci-${r}`).sort());
      for (const entry of listed.json.tokens) t.same(Object.keys(entry).sort(), ['created_at', 'expires_at', 'id', 'name', 'role']);
      const text = JSON.stringify(listed.json);
      for (const role of ROLES) t.notOk(text.includes(tokens[role].slice(22)), `no part of the ${role} secret`);
    });

    await t.test('every admin route × every role: 403 FORBIDDEN exactly where the table says', async (t) => {
      for (const row of ADMIN_ROUTE_ROLES) {
        // The token routes last: an admin's DELETE of a sample id is harmless, but keep them apart.
        for (const role of [...ROLES, 'config' as const]) {
          const token = role === 'config' ? ADMIN_TOKEN : tokens[role];
          const body = row.method === 'POST' || row.method === 'PUT' ? '{}' : undefined;
          const answer = await adminCall(url, row.method, sample(row.path), body, token);
          const allowed = role === 'config' || roleAllows(role, row.role);
          if (allowed) {
            t.not(answer.status, 403, `${role} may ${row.method} ${row.path} (${answer.status})`);
            t.notOk([401, 429].includes(answer.status), `${role} is authenticated for ${row.method} ${row.path}`);
          } else {
            t.equal(answer.status, 403, `${role} may not ${row.method} ${row.path}`);
            t.equal(answer.json?.error?.code, 'FORBIDDEN');
          }
        }
      }
    });

    await t.test('a stolen read token cannot publish, and its 403s never drain the failure bucket', async (t) => {
      for (let i = 0; i < 20; i++) {
        const answer = await adminCall(url, 'POST', '/admin/artifacts', { name: 'app', version: '6.6.6', binary: binary.path }, tokens.read);
        t.equal(answer.status, 403);
      }
      t.equal((await adminCall(url, 'GET', '/admin/artifacts', undefined, tokens.read)).json.artifacts[0].version, '1.0.0', 'nothing was published');
      t.equal((await adminCall(url, 'GET', '/admin/artifacts', undefined, 'wrong-token')).status, 401, 'the bucket is still full after the matrix and 20 more 403s');
    });

    await t.test('whoami names the token, its role and the calls it may make', async (t) => {
      const me = await adminCall(url, 'GET', '/admin/whoami', undefined, tokens.operate);
      t.match(me.json, { token_id: ids.operate, token_name: 'ci-operate', role: 'operate', expires_at: null });
      t.ok(me.json.routes.includes('POST /admin/rollout'));
      t.notOk(me.json.routes.includes('POST /admin/artifacts'));
      t.match((await adminCall(url, 'GET', '/admin/whoami')).json, { token_id: 'config', token_name: 'config', role: 'admin' });
    });

    await t.test('a revoked token is refused at once; revoking it twice is 404', async (t) => {
      const revoked = await adminCall(url, 'DELETE', `/admin/tokens/${ids.publish}`);
      t.equal(revoked.status, 200);
      t.same(Object.keys(revoked.json).sort(), ['created_at', 'expires_at', 'id', 'name', 'role']);
      t.equal(revoked.json.name, 'ci-publish');
      const refused = await adminCall(url, 'GET', '/admin/artifacts', undefined, tokens.publish);
      t.equal(refused.status, 401);
      t.equal(refused.json.error.code, 'UNAUTHORIZED');
      t.equal((await adminCall(url, 'DELETE', `/admin/tokens/${ids.publish}`)).status, 404);
      t.equal((await adminCall(url, 'DELETE', '/admin/tokens/config')).json.error.code, 'TOKEN_NOT_FOUND', 'the configured token is not in the table');
    });

    await t.test('an expired token is refused', async (t) => {
      const short = await adminCall(url, 'POST', '/admin/tokens', { name: 'short', role: 'admin', expires_in: '2s' });
      t.equal(short.status, 201);
      t.ok(short.json.expires_at >= Math.floor(Date.now() / 1000) + 1);
      t.equal((await adminCall(url, 'GET', '/admin/tokens', undefined, short.json.token)).status, 200, 'valid before it expires');
      await eventually('the token expires', () => adminCall(url, 'GET', '/admin/tokens', undefined, short.json.token), (a) => a.status === 401, 5_000);
    });

    await t.test('a token body is checked before anything is stored', async (t) => {
      for (const [body, field] of [
        [{ role: 'read' }, 'name'], [{ name: 'x', role: 'root' }, 'role'], [{ name: 'config', role: 'read' }, 'name'],
        [{ name: 'x', role: 'read', expires_in: '0s' }, 'expires_in'], [{ name: 'x', role: 'read', expires_in: 1.5 }, 'expires_in'],
        [{ name: 'x', role: 'read', secret: 'mine' }, 'secret'], [{ name: 'x\u0000', role: 'read' }, 'name'],
      ] as const) {
        const answer = await adminCall(url, 'POST', '/admin/tokens', body);
        t.equal(answer.status, 400, `${JSON.stringify(body)} refused`);
        t.match(answer.json.error.message, field);
      }
    });

    await t.test('brute force with well-formed guesses still ends in 429', async (t) => {
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) {
        statuses.push((await adminCall(url, 'GET', '/admin/artifacts', undefined, `upd_${ids.read}_${String(i).padStart(43, 'A')}`)).status);
      }
      t.ok(statuses.includes(401) && statuses.at(-1) === 429, `401 then 429: ${statuses.join(' ')}`);
      t.equal((await adminCall(url, 'GET', '/admin/artifacts', undefined, tokens.read)).status, 200, 'a valid token passes the empty bucket');
    });

    await t.test('the audit log has every change and refusal, newest first, in pages, with no secret', async (t) => {
      const all: any[] = [];
      let after: string | null = null;
      do {
        const page: any = await adminCall(url, 'GET', `/admin/audit?limit=7${after ? `&after=${after}` : ''}`, undefined, tokens.read);
        t.equal(page.status, 200);
        t.ok(page.json.entries.length <= 7);
        all.push(...page.json.entries);
        after = page.json.next;
      } while (after !== null);
      const ids_ = all.map((e) => e.id);
      t.same(ids_, [...ids_].sort((a, b) => b - a), 'newest first');
      t.equal(new Set(ids_).size, ids_.length, 'no entry on two pages');
      t.same(Object.keys(all[0]).sort(), ['at', 'detail', 'id', 'method', 'path', 'role', 'status', 'token_id', 'token_name']);
      const created = all.filter((e) => e.method === 'POST' && e.path === '/admin/tokens' && e.status === 201);
      t.equal(created.length, ROLES.length + 1, 'each token creation');
      t.match(created.at(-1), { token_id: 'config', token_name: 'config', role: 'admin', detail: /created token [0-9a-f]{16} \(ci-read, read\)/ });
      t.ok(all.some((e) => e.status === 403 && e.token_id === ids.read && e.role === 'read' && e.path === '/admin/artifacts'), 'the stolen read token\'s attempt');
      t.ok(all.some((e) => e.status === 401 && e.token_id === null && e.token_name === null && e.role === null), 'a refusal without a valid token has no token');
      t.ok(all.some((e) => e.status === 429 && e.token_id === null), 'the brute force');
      t.ok(all.some((e) => e.method === 'DELETE' && e.status === 200 && /revoked token/.test(e.detail)), 'the revocation');
      t.notOk(all.some((e) => e.method === 'GET' && e.status === 200), 'plain reads are not recorded');
      const text = JSON.stringify(all);
      for (const role of ROLES) t.notOk(text.includes(tokens[role].slice(22)), `no secret of the ${role} token`);
      t.notOk(text.includes(ADMIN_TOKEN), 'not the configured token');
      for (const bad of ['limit=0', 'limit=1001', 'after=abc', 'after=-1', 'other=1']) {
        t.equal((await adminCall(url, 'GET', `/admin/audit?${bad}`)).status, 400, bad);
      }
    });
  });
}
