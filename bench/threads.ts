import { readdirSync, readFileSync } from 'node:fs';

// CPU time per thread of a process, by thread name, from /proc (Linux): each actor names its
// thread after itself (src/actors/runtime.ts), so a bench can say what one actor's thread
// spent per request without a profiler, which multiplies what it measures. The first field of
// /proc/<pid>/task/<tid>/schedstat is the thread's time on a CPU in nanoseconds.

/** CPU seconds by thread name (threads of one name summed: e.g. the fleet threads of two servers). */
export type ThreadCpu = ReadonlyMap<string, number>;

/** Every thread's CPU seconds so far, summed by name; empty where /proc is not there. */
export function threadCpu(pid = process.pid): ThreadCpu {
  const byName = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tids) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      byName.set(name, (byName.get(name) ?? 0) + ns / 1e9);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return byName;
}

/** CPU seconds each thread name spent between two readings (threads born since count whole). */
export function threadCpuSince(before: ThreadCpu, after: ThreadCpu = threadCpu()): Map<string, number> {
  const spent = new Map<string, number>();
  for (const [name, seconds] of after) spent.set(name, seconds - (before.get(name) ?? 0));
  return spent;
}
