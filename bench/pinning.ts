import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { findCommand } from '../test/helpers/system-tool-list.js';

// Separate cores for the load generator and the server under test, where the machine allows:
// a load generator sharing the server's cores steals the CPU it measures. `taskset` pins; with
// fewer than two usable cores, without taskset, or with BENCH_PIN=0 nothing is pinned and the
// suites say so in their records.
//
//   server (and its baseline)  ─ first half of the cores
//   load generator (wrk, curl, the CoAP load loop) ─ second half
//
// wrk and curl also run in a session of their own (`setsid`). Linux's autogroup scheduling
// (on by default, /proc/sys/kernel/sched_autogroup_enabled) gives each session one weight,
// spread over the cores by where its processes run. In the bench's session, wrk on the load
// core had only what the server under test, busy on the other core, left of that weight. A
// process of another session on wrk's core (PostgreSQL flushing the inventory) then took
// most of that core: a busy loop in a session of its own left wrk 0.39 of it, against 0.50
// with wrk in its own session (bench/results/2026-11-30-postgres-streamed-rows.md). Both
// stop by themselves (wrk -d, curl --max-time), so nothing is left behind.

export interface CpuPlan {
  readonly pinned: boolean;
  /** taskset CPU lists, e.g. "0" and "1", or "0-1" and "2-3". */
  readonly server: string;
  readonly load: string;
  /** What the record shows: the lists, or why nothing was pinned. */
  readonly description: string;
}

let plan: CpuPlan | undefined;

export function cpuPlan(): CpuPlan {
  if (plan === undefined) {
    const decided = decide();
    plan = { ...decided, description: `${decided.description}; wrk and curl ${hasSetsid() ? 'in a session of their own' : 'in the bench\'s session (no setsid)'}` };
  }
  return plan;
}

function decide(): CpuPlan {
  const unpinned = (why: string): CpuPlan => ({ pinned: false, server: '', load: '', description: `not pinned: ${why}` });
  if (process.env.BENCH_PIN === '0') return unpinned('BENCH_PIN=0');
  let allowed: number[];
  try {
    // The CPUs this process may run on (a container or cgroup may allow fewer than exist).
    const text = execFileSync('taskset', ['-cp', String(process.pid)], { encoding: 'utf8' });
    allowed = expandCpuList(text.split(':').pop()!.trim());
  } catch {
    return unpinned('taskset is not installed or not permitted');
  }
  if (allowed.length < 2 || availableParallelism() < 2) return unpinned(`${allowed.length} usable core(s)`);
  const half = Math.floor(allowed.length / 2);
  const server = allowed.slice(0, half).join(',');
  const load = allowed.slice(half).join(',');
  return { pinned: true, server, load, description: `server on CPU ${server}, load generator on CPU ${load}` };
}

/** "0-2,5" → [0, 1, 2, 5]. */
export function expandCpuList(list: string): number[] {
  return list.split(',').flatMap((part) => {
    const [from, to] = part.split('-').map(Number);
    if (from === undefined || !Number.isInteger(from)) return [];
    return Array.from({ length: (to ?? from) - from + 1 }, (_, i) => from + i);
  });
}

/**
 * A command line run on `role`'s cores (unchanged when nothing is pinned); a load generator's
 * also in a session of its own where `setsid` is installed (see above).
 */
export function onCores(role: 'server' | 'load', command: string, args: readonly string[]): [string, string[]] {
  const p = cpuPlan();
  const [file, argv]: [string, string[]] = p.pinned ? ['taskset', ['-c', p[role], command, ...args]] : [command, [...args]];
  // --wait: should setsid have to fork (it does when it leads its process group), it still
  // exits with the command's status.
  return role === 'load' && hasSetsid() ? ['setsid', ['--wait', file, ...argv]] : [file, argv];
}

let setsidFound: boolean | undefined;

/** Whether `setsid` (util-linux) is on PATH, looked up once. */
function hasSetsid(): boolean {
  return (setsidFound ??= findCommand('setsid') !== undefined);
}

/**
 * Pins every thread of this process (and the threads it starts later, which inherit it) to
 * `role`'s cores; returns the function that gives all usable cores back.
 */
export function pinThisProcess(role: 'server' | 'load'): () => void {
  const p = cpuPlan();
  if (!p.pinned) return () => undefined;
  const all = `${p.server},${p.load}`;
  execFileSync('taskset', ['-a', '-cp', p[role], String(process.pid)], { stdio: 'ignore' });
  return () => execFileSync('taskset', ['-a', '-cp', all, String(process.pid)], { stdio: 'ignore' });
}
