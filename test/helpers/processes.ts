import { readFileSync, readdirSync } from 'node:fs';

// The processes a test's server started, read from Linux's /proc: a test that kills a server
// by -9 checks that nothing it ran lives on (a child left running keeps eating a core and may
// write into the store after a restart tidied it).

interface ProcessEntry {
  readonly pid: number;
  readonly ppid: number;
  /** The program's name as the kernel keeps it (at most 15 characters). */
  readonly comm: string;
  /** R, S, D, T (stopped), Z (zombie: ended, not yet reaped), … */
  readonly state: string;
}

function readEntry(pid: number): ProcessEntry | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split at the last ')'.
  const close = stat.lastIndexOf(')');
  const [state = '', ppid = '0'] = stat.slice(close + 2).split(' ');
  return { pid, ppid: Number(ppid), comm: stat.slice(stat.indexOf('(') + 1, close), state };
}

function allEntries(): ProcessEntry[] {
  return readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map((name) => readEntry(Number(name))).filter((e): e is ProcessEntry => e !== undefined);
}

/** Every process below `root` (children, their children, …) whose program is `comm`. */
export function descendantsNamed(root: number, comm: string): number[] {
  const entries = allEntries();
  const below = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const e of entries) {
      if (!below.has(e.pid) && below.has(e.ppid)) {
        below.add(e.pid);
        grew = true;
      }
    }
  }
  return entries.filter((e) => e.pid !== root && below.has(e.pid) && e.comm === comm).map((e) => e.pid);
}

/** Whether `pid` still runs: it exists and is not a zombie (ended, waiting to be reaped). */
export function isRunning(pid: number): boolean {
  const entry = readEntry(pid);
  return entry !== undefined && entry.state !== 'Z';
}
