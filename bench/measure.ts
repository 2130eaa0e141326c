import { spawn } from 'node:child_process';
import { constants as fsc } from 'node:fs';
import { access, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';

// Runs a command and reports its wall time, CPU time and peak resident memory. GNU time gives
// the peak exactly (`%M`, in KiB) and the CPU seconds (`%U %S`); where it is not installed, /proc/PID/status VmHWM is polled instead,
// which can miss a peak reached in the last few milliseconds of the process.

const GNU_TIME = '/usr/bin/time';
const POLL_MS = 5;

export interface Measured {
  readonly wallMs: number;
  readonly peakRssKb: number;
  /** User + system CPU time; NaN without GNU time (the poll cannot see it reliably). */
  readonly cpuMs: number;
  readonly peakSource: 'gnu-time' | 'proc-poll';
  readonly stdout: string;
  readonly stderr: string;
}

let gnuTime: Promise<boolean> | undefined;
function haveGnuTime(): Promise<boolean> {
  gnuTime ??= access(GNU_TIME, fsc.X_OK).then(() => true, () => false);
  return gnuTime;
}

export async function runMeasured(command: string, args: readonly string[], scratchDir: string, timeoutMs = 300_000): Promise<Measured> {
  const useTime = await haveGnuTime();
  const timeOut = join(scratchDir, `time-${process.pid}-${Date.now()}.txt`);
  const [file, argv] = useTime ? [GNU_TIME, ['-f', '%M %U %S', '-o', timeOut, command, ...args]] : [command, [...args]];
  const started = performance.now();
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  let polledKb = 0;
  const poller = useTime ? undefined : setInterval(() => {
    readFile(`/proc/${child.pid}/status`, 'utf8').then((status) => {
      polledKb = Math.max(polledKb, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
    }, () => undefined);
  }, POLL_MS);
  const guard = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (c) => resolve(c));
  });
  const wallMs = performance.now() - started;
  clearTimeout(guard);
  if (poller) clearInterval(poller);
  if (code !== 0) throw new Error(`${command} exited with ${code}: ${stderr.trim()}`);
  let peakRssKb = polledKb;
  let cpuMs = Number.NaN;
  if (useTime) {
    const [maxRss, user, system] = ((await readFile(timeOut, 'utf8')).trim().split('\n').pop() ?? '').split(' ').map(Number);
    peakRssKb = maxRss ?? Number.NaN;
    cpuMs = ((user ?? Number.NaN) + (system ?? Number.NaN)) * 1000;
    await rm(timeOut, { force: true });
  }
  return { wallMs, peakRssKb, cpuMs, peakSource: useTime ? 'gnu-time' : 'proc-poll', stdout, stderr };
}
