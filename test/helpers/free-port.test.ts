import { spawn } from 'node:child_process';
import { readFile, readdir, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
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

/**
 * Ports picked by `count` child processes at once, `each` apiece (from `span` when given). Each
 * child holds its ports until every child has picked (its stdin closes then): a port freed by a
 * child that ended may be picked again, so only children alive together must not share one.
 */
async function pickInChildren(t: Test, count: number, each: number, span?: { low: number; high: number }): Promise<number[]> {
  const helper = new URL('./free-port.js', import.meta.url).href;
  const script = `const { freePort } = await import(${JSON.stringify(helper)});
    const ports = await Promise.all(Array.from({ length: ${each} }, () => freePort(${span ? JSON.stringify(span) : ''})));
    process.stdout.write(JSON.stringify(ports) + '\\n');
    process.stdin.resume().on('end', () => process.exit(0));`;
  const children = Array.from({ length: count }, () => {
    const node = nodeChild(['--input-type=module', '-e', script]);
    const child = spawn(node.command, node.args, { stdio: ['pipe', 'pipe', 'inherit'], env: node.env });
    let out = '';
    const picked = new Promise<number[]>((resolve, reject) => {
      child.stdout.on('data', (d) => {
        out += d;
        if (out.endsWith('\n')) resolve(JSON.parse(out) as number[]);
      });
      child.once('close', (code) => reject(new Error(`a child ended with ${code} before it reported`)));
    });
    const ended = new Promise<number | null>((resolve) => child.once('close', resolve));
    return { child, picked, ended };
  });
  const all = (await Promise.all(children.map((c) => c.picked))).flat();
  for (const { child } of children) child.stdin.end();
  t.same(await Promise.all(children.map((c) => c.ended)), Array<number>(count).fill(0), 'every child ended well');
  return all;
}

t.test('processes picking at once never share a port, and each frees its reservations when it ends', async (t) => {
  const all = await pickInChildren(t, 4, 60);
  t.equal(all.length, 240);
  t.equal(new Set(all).size, all.length, 'no port picked by two processes');
  const left = new Set(await readdir(RESERVATIONS));
  t.same(all.filter((port) => left.has(String(port))), [], 'no reservation outlives its process');
});

t.test('reservations left by a killed run are taken over by one process each, never two', async (t) => {
  // A span of 24 ports whose free ones all carry the reservation of a process that has ended:
  // four processes at once take them over, and each port must go to one of them only.
  const dead = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => dead.once('close', resolve));
  const span = await staleSpan(24, dead.pid!);
  t.teardown(() => removeStale(span, dead.pid!));
  const all = await pickInChildren(t, 4, 4, span);
  t.equal(new Set(all).size, all.length, `no port taken over twice (${all.length} picked in ${span.low}-${span.high})`);
  const left = new Set(await readdir(RESERVATIONS));
  t.same([...left].filter((name) => name.endsWith('.takeover') || name.endsWith('.new')), [], 'no takeover or temporary file left');
});

/** A span of `size` ports, starting at a reserved one, where every port without a reservation gets one naming `pid`. */
async function staleSpan(size: number, pid: number): Promise<{ low: number; high: number }> {
  const low = Math.min(await freePort(), testPortSpan().high - size);
  for (let port = low; port < low + size; port++) {
    await writeFile(join(RESERVATIONS, String(port)), String(pid), { flag: 'wx' }).catch(() => undefined);
  }
  return { low, high: low + size - 1 };
}

/** The reservations of `span` that still name the ended `pid`: the ones nobody took over. */
async function removeStale(span: { low: number; high: number }, pid: number): Promise<void> {
  for (let port = span.low; port <= span.high; port++) {
    const path = join(RESERVATIONS, String(port));
    if (await readFile(path, 'utf8').catch(() => '') === String(pid)) await unlink(path).catch(() => undefined);
  }
}
