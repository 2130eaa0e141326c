import { readFile } from 'node:fs/promises';
import { expandCpuList } from '../pinning.js';

// Who used the cores during the plateau (Linux /proc): the server process, the load
// processes, and everything else on the same cores. On a shared machine a late answer can be
// the server's own work or another program's: a server whose core was half taken by others
// was not measured, and neither was a harness in that state. Jiffies are read from /proc/stat
// (per CPU) and /proc/PID/stat (utime + stime, every thread of the process).

export interface CpuSnapshot {
  readonly atMs: number;
  /** Busy jiffies (everything but idle and iowait) per CPU number. */
  readonly busyByCpu: ReadonlyMap<number, number>;
  /** utime + stime jiffies per PID. */
  readonly byPid: ReadonlyMap<number, number>;
}

/** Jiffies per second of /proc (USER_HZ): 100 on every Linux architecture Node runs on. */
const HZ = 100;

export async function cpuSnapshot(pids: readonly (number | undefined)[]): Promise<CpuSnapshot | undefined> {
  try {
    const busyByCpu = new Map<number, number>();
    for (const line of (await readFile('/proc/stat', 'utf8')).split('\n')) {
      const m = /^cpu(\d+) (.*)$/.exec(line);
      if (!m) continue;
      const [user, nice, system, , , irq, softirq, steal] = m[2]!.trim().split(/\s+/).map(Number);
      busyByCpu.set(Number(m[1]), user! + nice! + system! + irq! + softirq! + steal!);
    }
    const byPid = new Map<number, number>();
    for (const pid of pids) {
      if (pid === undefined) continue;
      const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
      if (!text) continue;
      // The command name may hold spaces: fields are counted after its closing parenthesis.
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      byPid.set(pid, Number(fields[11]) + Number(fields[12]));
    }
    return { atMs: performance.now(), busyByCpu, byPid };
  } catch {
    return undefined;
  }
}

export interface CoreUse {
  /** The CPUs of this role (taskset list), or all when nothing was pinned. */
  readonly cpus: string;
  /** Cores' worth of time those CPUs were busy, all programs together. */
  readonly busy_cores: number;
  /** Cores' worth used by the role's own processes. */
  readonly own_cores: number;
  /** Busy time on those CPUs that was not the role's own: other programs on the machine. */
  readonly others_share: number;
}

/**
 * One role's use of its cores between two snapshots: its own share from its PIDs, or from
 * `ownCores` when the processes measured themselves (the load processes exit as soon as they
 * have reported, before the last snapshot can read them).
 */
export function coreUse(start: CpuSnapshot, end: CpuSnapshot, cpus: string | undefined, pids: readonly (number | undefined)[], ownCores?: number): CoreUse {
  const seconds = (end.atMs - start.atMs) / 1000;
  const list = cpus ? expandCpuList(cpus) : [...end.busyByCpu.keys()];
  const jiffies = (m: ReadonlyMap<number, number>, keys: readonly number[]) => keys.reduce((n, k) => n + (m.get(k) ?? 0), 0);
  const busy = (jiffies(end.busyByCpu, list) - jiffies(start.busyByCpu, list)) / HZ / seconds;
  const ids = pids.filter((p): p is number => p !== undefined && start.byPid.has(p) && end.byPid.has(p));
  const own = ownCores ?? (jiffies(end.byPid, ids) - jiffies(start.byPid, ids)) / HZ / seconds;
  const round = (n: number) => Number(n.toFixed(3));
  return { cpus: cpus ?? 'all', busy_cores: round(busy), own_cores: round(own), others_share: round(Math.max(0, busy - own) / list.length) };
}

/** Past this share of its cores taken by other programs, a role was not measured alone. */
export const OTHERS_SHARE_LIMIT = 0.25;

export function contentionReasons(role: string, use: CoreUse): string[] {
  return use.cpus !== 'all' && use.others_share > OTHERS_SHARE_LIMIT
    ? [`other programs took ${(use.others_share * 100).toFixed(0)} % of the ${role}'s CPU ${use.cpus} (limit ${OTHERS_SHARE_LIMIT * 100} %): the ${role} was not measured alone`]
    : [];
}
