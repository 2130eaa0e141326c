import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// Where a server's CPU went, per thread, from the .cpuprofile files `node --cpu-prof` writes
// (one per thread: the supervisor and each actor worker). The heartbeat suite runs the server
// with it when BENCH_HEARTBEAT_PROFILE names a directory and prints this summary; by hand:
//   node dist/bench/profile.js DIR [HEARTBEATS]
// Each thread is named by the actor folder (src/actors/<name>/) its code comes from most.
// Busy time is every sample but "(idle)" and a pool worker blocked in Atomics.wait (piscina's
// idle loop, which the profiler samples as running); self time is the function on top of the
// stack, total time the function anywhere on it (counted once per sample when it recurses).
// Samples are wall-clock ticks, not CPU time: a thread preempted by another on the same core
// (the heartbeat suite pins every server thread to the server cores) takes its pending tick
// when it runs again, charged to where it stopped. So a postMessage that wakes a peer on the
// same core (the front-ends' fleet batches) shows a share the thread never spent: timed
// around it in the server, 0.8 µs a heartbeat in wall time against 0.13 µs in a process with
// the cores to itself. Read CPU per thread from `--against` (from /proc), and this for where.
// Given windows (µs of the monotonic clock, which is what a profile's timestamps and
// process.hrtime both read), only the samples inside them count: the load, not the start-up.

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
  readonly startTime: number;
  readonly endTime: number;
}

export interface ThreadProfile {
  readonly file: string;
  readonly role: string;
  readonly wallSeconds: number;
  readonly busySeconds: number;
  /** Seconds by function, on top of the stack; and anywhere on it. */
  readonly self: ReadonlyMap<string, number>;
  readonly total: ReadonlyMap<string, number>;
  /** Seconds on top of the stack by where the code lives (a package, a node module, our file). */
  readonly places: ReadonlyMap<string, number>;
}

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);
/** Functions whose samples are a thread waiting, not working. */
const WAITING = new Set(['atomicsWaitLoop']);

/** A span of the monotonic clock in µs: [start, end). */
export type Window = readonly [number, number];

/** Now on the monotonic clock, in µs (the clock of a profile's timestamps). */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

function shortUrl(url: string): string {
  if (url === '') return 'native';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const ours = /\/dist\/((?:src|bench|test)\/.*)$/.exec(url);
  if (ours) return ours[1]!;
  return url.replace(/^file:\/\//, '');
}

function keyOf(frame: CallFrame): string {
  if (SPECIAL.has(frame.functionName)) return frame.functionName;
  return `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;
}

function placeOf(frame: CallFrame): string {
  if (SPECIAL.has(frame.functionName)) return frame.functionName;
  return shortUrl(frame.url) === 'native' ? `native ${frame.functionName || '(anonymous)'}` : shortUrl(frame.url);
}

function roleOf(profile: CpuProfile): string {
  const counts = new Map<string, number>();
  for (const node of profile.nodes) {
    const m = /\/dist\/src\/(?:actors\/([^/]+)\/|(supervisor)\/)/.exec(node.callFrame.url);
    const role = m?.[1] ?? m?.[2];
    if (role) counts.set(role, (counts.get(role) ?? 0) + 1);
  }
  if (counts.size === 0 && profile.nodes.some((n) => n.callFrame.url.includes('node_modules/piscina/'))) return 'diff-pool worker';
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'unknown';
}

const add = (map: Map<string, number>, key: string, seconds: number) => map.set(key, (map.get(key) ?? 0) + seconds);

export function summarizeProfile(file: string, profile: CpuProfile, windows?: readonly Window[]): ThreadProfile {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfById = new Map<number, number>();
  let idle = 0;
  let at = profile.startTime;
  let sampled = 0;
  const inside = (t: number) => !windows || windows.some(([from, to]) => t >= from && t < to);
  // timeDeltas[i] is the time since the previous sample: charged to the sample it ends.
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (!inside(at)) return;
    sampled += delta / 1e6;
    selfById.set(id, (selfById.get(id) ?? 0) + delta / 1e6);
  });
  const waiting = (id: number) => {
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) if (WAITING.has(byId.get(n)!.callFrame.functionName)) return true;
    return false;
  };
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const places = new Map<string, number>();
  for (const [id, seconds] of selfById) {
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)' || waiting(id)) {
      idle += seconds;
      continue;
    }
    add(self, keyOf(node.callFrame), seconds);
    add(places, placeOf(node.callFrame), seconds);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const key = keyOf(byId.get(at)!.callFrame);
      if (key === '(root)' || seen.has(key)) continue;
      seen.add(key);
      add(total, key, seconds);
    }
  }
  const wallSeconds = windows ? sampled : (profile.endTime - profile.startTime) / 1e6;
  return { file, role: roleOf(profile), wallSeconds, busySeconds: wallSeconds - idle, self, total, places };
}

export async function readProfiles(dir: string, windows?: readonly Window[]): Promise<ThreadProfile[]> {
  const files = (await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.cpuprofile')).sort();
  const out: ThreadProfile[] = [];
  for (const f of files) out.push(summarizeProfile(f, JSON.parse(await readFile(join(dir, f), 'utf8')) as CpuProfile, windows));
  return out.sort((a, b) => b.busySeconds - a.busySeconds);
}

function top(map: ReadonlyMap<string, number>, n: number): [string, number][] {
  return [...map].sort((a, b) => b[1] - a[1]).slice(0, n);
}

/** The per-thread summary as text; with `heartbeats`, each figure also in µs per heartbeat. */
export function profileText(threads: readonly ThreadProfile[], heartbeats?: number, rows = 12): string {
  const per = (s: number) => (heartbeats ? `  ${((s * 1e6) / heartbeats).toFixed(2).padStart(7)} us/hb` : '');
  const line = (name: string, s: number, busy: number) => `    ${s.toFixed(2).padStart(6)} s ${((100 * s) / busy).toFixed(1).padStart(5)} %${per(s)}  ${name}`;
  const out: string[] = [];
  const busyAll = threads.reduce((sum, t) => sum + t.busySeconds, 0);
  out.push(`  all threads: busy ${busyAll.toFixed(2)} s${per(busyAll)}${heartbeats ? ` over ${heartbeats} heartbeats` : ''}`);
  for (const t of threads) {
    if (t.busySeconds < 0.05 * busyAll) {
      out.push(`  ${t.role} (${t.file}): busy ${t.busySeconds.toFixed(2)} of ${t.wallSeconds.toFixed(1)} s${per(t.busySeconds)}`);
      continue;
    }
    out.push(`  ${t.role} (${t.file}): busy ${t.busySeconds.toFixed(2)} of ${t.wallSeconds.toFixed(1)} s${per(t.busySeconds)}`);
    out.push('   by place (self):');
    for (const [k, s] of top(t.places, rows)) out.push(line(k, s, t.busySeconds));
    out.push('   by function (self):');
    for (const [k, s] of top(t.self, rows)) out.push(line(k, s, t.busySeconds));
    out.push('   by function (total, ours and packages):');
    for (const [k, s] of top(new Map([...t.total].filter(([k]) => !k.includes('node:') && !SPECIAL.has(k))), rows)) out.push(line(k, s, t.busySeconds));
  }
  return out.join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [dir, count] = process.argv.slice(2);
  if (!dir) {
    console.error('usage: node dist/bench/profile.js DIR [HEARTBEATS]');
    process.exit(2);
  }
  console.log(profileText(await readProfiles(dir), count ? Number(count) : undefined));
}
