import { spawn } from 'node:child_process';
import { readFile, readdir, unlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { freePort, RESERVATIONS, testPortSpan } from './free-port.js';
import { nodeChild } from './node-options.js';

// The ports tests write into a server's configuration before it binds them. A port the kernel
// may hand to someone else in between (any outgoing connection's local port) made a spawned
// server fail to start once in a CI run; these are the properties that rule it out.

const ephemeral = (await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')).trim().split(/\s+/).map(Number);

t.test('the span of test ports lies outside the ephemeral range, on its wider side', async (t) => {
  t.same(testPortSpan('32768\t60999\n'), { low: 10_000, high: 32_767 }, "Linux's default: below");
  t.same(testPortSpan('1024 40000'), { low: 40_001, high: 65_535 }, 'above when there is more room there');
  t.same(testPortSpan('garbage'), { low: 20_000, high: 32_767 }, 'an unreadable range: below the default one');
});

t.test('no port from the ephemeral range, where the kernel takes ports unasked', async (t) => {
  const ports = await Promise.all(Array.from({ length: 100 }, () => freePort()));
  const inside = ports.filter((port) => port >= ephemeral[0]! && port <= ephemeral[1]!);
  t.same(inside, [], `none of 100 in ${ephemeral.join('-')}`);
  t.equal(new Set(ports).size, ports.length, 'and no port twice in one process');
});

t.test('a port another program listens on is not handed out', async (t) => {
  const port = await freePort();
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  // Its reservation gone, only the listener stands in the way.
  await unlink(join(RESERVATIONS, String(port)));
  await t.rejects(freePort({ low: port, high: port }), /no free port found/);
});

t.test('processes picking at once never share a port, and each frees its reservations when it ends', async (t) => {
  const helper = new URL('./free-port.js', import.meta.url).href;
  const script = `const { freePort } = await import(${JSON.stringify(helper)});
    const ports = await Promise.all(Array.from({ length: 60 }, () => freePort()));
    process.stdout.write(JSON.stringify({ pid: process.pid, ports }));`;
  const runs = await Promise.all(Array.from({ length: 4 }, () => new Promise<{ pid: number; ports: number[] }>((resolve, reject) => {
    const node = nodeChild(['--input-type=module', '-e', script]);
    const child = spawn(node.command, node.args, { stdio: ['ignore', 'pipe', 'inherit'], env: node.env });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.once('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`child ended with ${code}`))));
  })));
  const all = runs.flatMap((run) => run.ports);
  t.equal(all.length, 240);
  t.equal(new Set(all).size, all.length, 'no port picked by two processes');
  const left = new Set(await readdir(RESERVATIONS));
  t.same(all.filter((port) => left.has(String(port))), [], 'no reservation outlives its process');
});
