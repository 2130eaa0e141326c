import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { adminCall, eventually } from '../helpers/admin.js';
import { startCluster } from '../helpers/cluster.js';
import { ADMIN_TOKEN, firmware, freePort, makeFixture } from '../helpers/fixture.js';
import { configDocument, spawnServer, writeConfig } from '../helpers/server.js';

// Operator tokens across processes: a token made on one replica of a cluster works on the
// other, and once revoked on one it is refused on the other within a second; and no secret
// ever reaches a log line, an audit row or the database file.

t.test('a token revoked on one replica is refused on the other within 1 s', async (t) => {
  const cluster = await startCluster(t, 2);
  const [a, b] = cluster.replicas as [typeof cluster.replicas[0], typeof cluster.replicas[0]];
  const created = await adminCall(a.url, 'POST', '/admin/tokens', { name: 'pipeline', role: 'publish' });
  t.equal(created.status, 201);
  const token: string = created.json.token;
  await eventually('the other replica knows the token', () => adminCall(b.url, 'GET', '/admin/artifacts', undefined, token), (x) => x.status === 200, 5_000);

  const samples: number[] = [];
  for (let round = 0; round < 3; round++) {
    const next = round === 0 ? { id: created.json.id, token } : await (async () => {
      const made = await adminCall(a.url, 'POST', '/admin/tokens', { name: `pipeline-${round}`, role: 'read' });
      await eventually('known on b', () => adminCall(b.url, 'GET', '/admin/artifacts', undefined, made.json.token), (x) => x.status === 200, 5_000);
      return { id: made.json.id as string, token: made.json.token as string };
    })();
    t.equal((await adminCall(a.url, 'DELETE', `/admin/tokens/${next.id}`)).status, 200);
    const revokedAt = Date.now();
    t.equal((await adminCall(a.url, 'GET', '/admin/artifacts', undefined, next.token)).status, 401, 'refused at once where it was revoked');
    // A probe every 20 ms; each failure takes one of the 10 failure tokens, so stop at the first 401.
    for (;;) {
      const answer = await adminCall(b.url, 'GET', '/admin/whoami', undefined, next.token);
      if (answer.status === 401) break;
      t.equal(answer.status, 200);
      if (Date.now() - revokedAt > 5_000) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    samples.push(Date.now() - revokedAt);
    await new Promise((r) => setTimeout(r, 1_100)); // the bucket refills one a second
  }
  t.comment(`refused on the other replica after ${samples.join(', ')} ms`);
  for (const ms of samples) t.ok(ms <= 1_000, `refused within 1 s (${ms} ms)`);

  const audit = await adminCall(b.url, 'GET', '/admin/audit?limit=1000');
  t.ok(audit.json.entries.some((e: any) => e.method === 'DELETE' && e.status === 200 && e.token_id === 'config'), 'one audit log for the cluster: b lists a\'s revocation');
});

t.test('no secret reaches the logs, the audit rows or the database file', async (t) => {
  const fixture = await makeFixture('updater-secrets-');
  t.teardown(() => fixture.cleanup());
  const binary = await fixture.writeBinary('app.bin', firmware(10_000, 'secrets'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [{ name: 'app', version: '1.0.0', binary: binary.path }], { log_level: 'trace' }));
  const server = await spawnServer(configPath, url);
  t.teardown(() => { server.child.kill('SIGTERM'); return server.exited; });

  const created = await adminCall(url, 'POST', '/admin/tokens', { name: 'ci', role: 'admin' });
  t.equal(created.status, 201);
  const token: string = created.json.token;
  const secret = token.slice(22); // the part after upd_<id>_
  t.equal((await adminCall(url, 'POST', '/admin/gc', undefined, token)).status, 200);
  t.equal((await adminCall(url, 'POST', '/admin/tokens', { name: 'second', role: 'read' }, token)).status, 201);
  t.equal((await adminCall(url, 'DELETE', `/admin/tokens/${created.json.id}`, undefined, token)).status, 200);
  t.equal((await adminCall(url, 'POST', '/admin/gc', undefined, token)).status, 401, 'revoked, then tried again');
  t.equal((await adminCall(url, 'GET', '/admin/artifacts', undefined, `${token}x`)).status, 401);

  const audit = await adminCall(url, 'GET', '/admin/audit?limit=1000');
  t.ok(audit.json.entries.length >= 5);
  const rows = JSON.stringify(audit.json);
  t.notOk(rows.includes(secret), 'not in the audit rows');
  t.notOk(rows.includes(ADMIN_TOKEN), 'nor the configured token');
  server.child.kill('SIGTERM');
  await server.exited;
  const output = server.output();
  t.ok(output.includes('operator token created'), 'the creation is logged');
  t.notOk(output.includes(secret), 'not in the log at trace level');
  t.notOk(output.includes(ADMIN_TOKEN), 'nor the configured token');
  const file = await readFile(join(fixture.dir, 'store', 'updater.db')).catch(() => Buffer.alloc(0));
  const wal = await readFile(join(fixture.dir, 'store', 'updater.db-wal')).catch(() => Buffer.alloc(0));
  t.ok(file.length > 0, 'the database file was read');
  t.equal(Buffer.concat([file, wal]).indexOf(secret), -1, 'not in the database file');
});
