import t from 'tap';
import { contentionReasons, coreUse, cpuSnapshot, type CpuSnapshot } from '../../bench/soak/cpu.js';

// The soak's core accounting: how much of the server's (or the load's) pinned CPUs other
// programs took. A run where they took much of them measured the machine, not the server.

const snap = (atMs: number, cpu0: number, cpu1: number, server: number, load: number): CpuSnapshot =>
  ({ atMs, busyByCpu: new Map([[0, cpu0], [1, cpu1]]), byPid: new Map([[10, server], [20, load]]) });

t.test("a role's core use splits into its own processes and everyone else's", async (t) => {
  // 10 s: CPU 0 busy 900 jiffies (0.9 core), of which the server used 300; CPU 1 busy 500, the load 450.
  const start = snap(0, 1000, 1000, 100, 100);
  const end = snap(10_000, 1900, 1500, 400, 550);
  const server = coreUse(start, end, '0', [10]);
  t.same(server, { cpus: '0', busy_cores: 0.9, own_cores: 0.3, others_share: 0.6 });
  t.match(contentionReasons('server', server).join(), /other programs took 60 % of the server's CPU 0/);
  const load = coreUse(start, end, '1', [20]);
  t.same(load, { cpus: '1', busy_cores: 0.5, own_cores: 0.45, others_share: 0.05 });
  t.same(contentionReasons('load generator', load), [], 'under the limit');
  t.same(contentionReasons('server', coreUse(start, end, undefined, [10])), [], 'not pinned: reported, not judged');
  t.equal(coreUse(start, end, '1', [99], 0.4).own_cores, 0.4, 'processes gone by the end: their own measurement');
});

t.test('this machine can be read (Linux /proc)', { skip: process.platform === 'linux' ? false : 'not Linux' }, async (t) => {
  const a = await cpuSnapshot([process.pid]);
  let x = 0;
  for (let i = 0; i < 3e7; i++) x += i % 7;
  const b = await cpuSnapshot([process.pid]);
  t.ok(a && b && x > 0);
  const own = coreUse(a!, b!, undefined, [process.pid]);
  t.ok(own.own_cores > 0, `this process used ${own.own_cores} cores while it counted`);
});
