import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import t from 'tap';
import { newIdentities, preauthorize } from '../../src/load/simulated-identity.js';

// The load harness's identities (src/load/simulated-identity.ts): made a few at a time, so that
// making 100,000 does not hold the event loop for half a minute, and preauthorized in batches
// that are sent again once when their connection fails under them.

t.test('a preauthorization whose connection fails under it is sent again, once', async (t) => {
  const attempts: number[] = [];
  let dropsLeft = 1;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      // The first attempt loses its connection while its body is still arriving.
      if (dropsLeft > 0) {
        dropsLeft--;
        attempts.push(bytes);
        req.socket.destroy();
      }
    });
    req.on('end', () => {
      attempts.push(bytes);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"added":1}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const devices = (await newIdentities(2_000)).map((identity, n) => ({ id: `device-${n}`, identity }));
  await t.resolves(preauthorize(url, 'token', devices), 'the batch is preauthorized');
  t.equal(attempts.length, 2, 'sent twice: dropped, then answered');
  t.ok(attempts[1]! > attempts[0]!, 'the second attempt carried the whole body');

  dropsLeft = 2;
  attempts.length = 0;
  await t.rejects(preauthorize(url, 'token', devices), { message: 'fetch failed' }, 'a second failure is the caller\'s to see');
  t.equal(attempts.length, 2, 'no third attempt');
});

t.test('the identities are as many as asked, each its own key', async (t) => {
  const identities = await newIdentities(250);
  t.equal(identities.length, 250);
  t.ok(identities.every((i) => /^[0-9a-f]{64}$/.test(i.publicKey) && i.lastTimestamp === 0), 'raw Ed25519 public keys in hex, nothing signed yet');
  t.equal(new Set(identities.map((i) => i.publicKey)).size, 250, 'no key twice');
  t.same(await newIdentities(0), []);
});
