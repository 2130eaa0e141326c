import { connect } from 'node:net';
import t from 'tap';
import { adminCall } from '../helpers/admin.js';
import { createTestDatabase, ENGINES } from '../helpers/databases.js';
import { ADMIN_TOKEN, freePort, makeFixture } from '../helpers/fixture.js';
import { configDocument, spawnServer, writeConfig, type ServerProcess } from '../helpers/server.js';

// The attack of issue 36, item 3: an operator (or an intruder with an admin token) makes a
// change, and the server is killed the moment the answer's status line leaves it. The change
// must not escape the audit log: its row is committed before the change is made. Each round
// creates an admin token, kills the server with SIGKILL as the first byte of the answer
// arrives, restarts it, and checks that every token that exists has its audit row. On SQLite
// and on PostgreSQL.

const ROUNDS = 4;

/** Sends one admin POST on a raw socket and SIGKILLs the server as the first byte of the answer arrives. */
function postThenKill(port: number, path: string, body: string, server: ServerProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    });
    socket.once('data', (chunk) => {
      server.child.kill('SIGKILL');
      socket.destroy();
      resolve(chunk.toString('latin1').split('\r\n')[0]!);
    });
    socket.once('error', reject);
  });
}

for (const engine of ENGINES) {
  t.test(`${engine}: a change whose server is killed as it answers is in the audit log after the restart`, async (t) => {
    const fixture = await makeFixture();
    t.teardown(() => fixture.cleanup());
    const database = await createTestDatabase(engine, fixture.dir);
    t.teardown(() => database.drop());
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const configPath = await writeConfig(fixture, configDocument(fixture, port, [], { database: database.location, log_level: 'info' }));
    let server: ServerProcess | undefined;
    t.teardown(async () => {
      server?.child.kill('SIGKILL');
      await server?.exited;
    });

    for (let round = 1; round <= ROUNDS; round++) {
      server = await spawnServer(configPath, url);
      const status = await postThenKill(port, '/admin/tokens', JSON.stringify({ name: `round-${round}`, role: 'admin' }), server);
      t.match(status, /^HTTP\/1\.1 201/, `round ${round}: the token was created (${status})`);
      await server.exited;
    }
    server = await spawnServer(configPath, url);
    const tokens = await adminCall(url, 'GET', '/admin/tokens');
    t.equal(tokens.status, 200);
    const created = (tokens.json.tokens as { id: string; name: string }[]).filter((k) => k.name.startsWith('round-'));
    t.equal(created.length, ROUNDS, 'every round\'s token exists after its kill -9');
    const audit = await adminCall(url, 'GET', '/admin/audit?limit=1000');
    t.equal(audit.status, 200);
    const rows = (audit.json.entries as { method: string; path: string; status: number; detail: string }[])
      .filter((e) => e.method === 'POST' && e.path === '/admin/tokens');
    t.equal(rows.length, ROUNDS, 'one audit row per token creation, none lost to the kill');
    for (const row of rows) t.ok(row.status === 0 || row.status === 201, `a row of status ${row.status} (0: the server stopped before it recorded the answer)`);
    // A finished change fills its row in: the same request, answered normally, reads 201 with what it did.
    const answered = await adminCall(url, 'POST', '/admin/tokens', { name: 'answered', role: 'read' });
    t.equal(answered.status, 201);
    const last = (await adminCall(url, 'GET', '/admin/audit?limit=1')).json.entries[0];
    t.match(last, { method: 'POST', path: '/admin/tokens', status: 201, detail: new RegExp(`^created token ${answered.json.id}`) });
  });
}
