import { once } from 'node:events';
import { createServer, type Server, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import t, { type Test } from 'tap';
import { HttpLoadClient } from '../../src/load/http-client.js';

// The harness's keep-alive sockets must be closed by the harness, before the server's idle
// timeout closes them: uWS ends a connection idle for 10 s without a word, and a request sent
// on it as it goes was answered ECONNRESET and counted as the server's error (a flake of
// load/harness-auth beside busy processes). Played here with a server that never closes an
// idle connection itself: whoever ends the connection, it must be the client.

interface Connection {
  readonly socket: Socket;
  /** Resolves when the client ends the connection (its FIN reaches the server). */
  readonly endedByClient: Promise<void>;
}

async function startServer(t: Test): Promise<{ url: string; connections: Connection[] }> {
  const connections: Connection[] = [];
  const server: Server = createServer({ keepAliveTimeout: 0 }, (req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"update_available":false}'));
  });
  server.on('connection', (socket: Socket) => connections.push({ socket, endedByClient: once(socket, 'end').then(() => undefined) }));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const address = server.address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}`, connections };
}

t.test('an idle keep-alive socket is closed by the harness after its idle time', async (t) => {
  const { url, connections } = await startServer(t);
  const client = new HttpLoadClient(url, 4, 200);
  t.teardown(() => client.close());

  const answer = await client.heartbeat('{}');
  t.equal(answer.status, 200);
  t.equal(connections.length, 1, 'the heartbeat went over one connection');
  // Bounded so that the test ends without the fix: 25 times the idle time.
  let bound: NodeJS.Timeout | undefined;
  const ended = await Promise.race([connections[0]!.endedByClient.then(() => true), new Promise<boolean>((r) => (bound = setTimeout(() => r(false), 5_000)))]);
  clearTimeout(bound);
  t.ok(ended, 'the client ended the idle connection');

  const again = await client.heartbeat('{}');
  t.equal(again.status, 200, 'the next heartbeat is answered over a new connection');
  t.equal(connections.length, 2);
});

t.test('a socket in use is not closed at the idle time', async (t) => {
  const { url, connections } = await startServer(t);
  const client = new HttpLoadClient(url, 1, 2_000);
  t.teardown(() => client.close());
  // A heartbeat every 20 ms: the one socket is never idle for anywhere near 2 s.
  for (let i = 0; i < 10; i++) {
    t.equal((await client.heartbeat('{}')).status, 200);
    await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(connections.length, 1, 'every heartbeat went over the first connection');
});
