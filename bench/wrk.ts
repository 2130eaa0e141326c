import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { onCores } from './pinning.js';

// wrk as the load generator: a fixed number of connections and threads on loopback, POSTing
// one fixed body, so the server and the bare handler face exactly the same load.

/** Looked up on PATH (Debian's package puts it in /usr/bin), as the tests' needs('wrk') finds it. */
export const WRK_BIN = 'wrk';

export interface WrkOptions {
  readonly url: string;
  /** A Lua script made by `writePostScript`; without one, wrk GETs the URL. */
  readonly script?: string;
  /** wrk's per-request timeout (its default is 2 s, too short for a whole large download). */
  readonly timeoutSeconds?: number;
  readonly threads: number;
  readonly connections: number;
  readonly seconds: number;
}

export interface WrkResult {
  readonly requestsPerSecond: number;
  readonly requests: number;
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
  /** Non-2xx answers plus socket errors: any of them makes the figure meaningless. */
  readonly errors: number;
}

/** Writes a wrk script that POSTs `body` as JSON. */
export async function writePostScript(dir: string, name: string, body: string): Promise<string> {
  // A Lua long string takes the bytes verbatim; the JSON must not close it early.
  if (body.includes(']==]')) throw new RangeError('the body cannot be embedded in a Lua long string');
  const path = join(dir, `${name}.lua`);
  await writeFile(path, [
    'wrk.method = "POST"',
    `wrk.body = [==[${body}]==]`,
    'wrk.headers["Content-Type"] = "application/json"',
    '',
  ].join('\n'));
  return path;
}

export function runWrk(options: WrkOptions): Promise<WrkResult> {
  const args = ['-t', String(options.threads), '-c', String(options.connections), '-d', `${options.seconds}s`, '--latency',
    ...(options.script ? ['-s', options.script] : []), ...(options.timeoutSeconds ? ['--timeout', `${options.timeoutSeconds}s`] : []), options.url];
  return new Promise((resolve, reject) => {
    // Asynchronous on purpose: the server under test may share this process's event loop.
    // wrk is the load generator: on the load cores when the machine has them (pinning.ts).
    const [file, argv] = onCores('load', WRK_BIN, args);
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    // wrk stops itself after -d; this only guards against a wedged process.
    const guard = setTimeout(() => child.kill('SIGKILL'), (options.seconds + 30 + (options.timeoutSeconds ?? 0)) * 1000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(guard);
      if (code !== 0) return reject(new Error(`wrk exited with ${code}:\n${out}`));
      try {
        resolve(parseWrkOutput(out));
      } catch (err) {
        reject(err);
      }
    });
  });
}

export function parseWrkOutput(text: string): WrkResult {
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(text);
  const total = /(\d+) requests in/.exec(text);
  if (!rps || !total) throw new Error(`cannot read wrk output:\n${text}`);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const socketErrors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
  return {
    requestsPerSecond: Number(rps[1]),
    requests: Number(total[1]),
    latencyP50Ms: percentileMs(text, '50%'),
    latencyP99Ms: percentileMs(text, '99%'),
    errors: non2xx + socketErrors,
  };
}

/** wrk prints latencies with their own unit (us, ms, s). */
function percentileMs(text: string, label: string): number {
  const match = new RegExp(`^\\s*${label}\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(text);
  if (!match) return Number.NaN;
  const value = Number(match[1]);
  return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value;
}
