import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import type { Supervisor } from '../../src/supervisor/index.js';
import { eventually } from './admin.js';
import { freePort, type Fixture } from './fixture.js';
import { ACTOR_NODE_OPTIONS, nodeChild } from './node-options.js';

export const REPO_ROOT = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..');
export const UPDATER_BIN = join(REPO_ROOT, 'bin', 'updater.js');

export interface ArtifactEntry {
  name: string;
  os?: string;
  arch?: string;
  version: string;
  binary: string;
}

/** A configuration document for the fixture; `overrides` are merged at the top level. */
export function configDocument(fixture: Fixture, port: number, artifacts: ArtifactEntry[], overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const base: Record<string, unknown> = {
    listen: { http: `127.0.0.1:${port}` },
    signing: { private_key_file: fixture.keyPath },
    admin: { token_file: fixture.tokenPath },
    // Tests publish the binaries they write below the fixture directory; level 3 keeps full
    // files quick to make (the level itself has its own test).
    store: { dir: join(fixture.dir, 'store'), delta_concurrency: 2, publish_roots: [fixture.dir], full_compression_level: 3 },
    manifest: { retry_after: '1s' },
    log_level: 'warn',
    artifacts,
  };
  for (const [key, value] of Object.entries(overrides)) {
    const current = base[key];
    base[key] = isPlainObject(current) && isPlainObject(value) ? { ...current, ...value } : value;
  }
  return base;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export async function writeConfig(fixture: Fixture, doc: Record<string, unknown>, name = 'updater.yaml'): Promise<string> {
  const path = join(fixture.dir, name);
  await writeFile(path, stringify(doc));
  return path;
}

export interface TestServer {
  readonly url: string;
  readonly port: number;
  readonly configPath: string;
  readonly supervisor: Supervisor;
  stop(): Promise<void>;
}

/**
 * The supervisor and the configuration's loader, loaded by the first in-process start: about
 * 0.25 s of CPU (zod, yaml and the supervisor's modules, one by one) that a test file which
 * only spawns servers or runs the CLI would otherwise spend for nothing.
 */
const inProcessServer = () => Promise.all([import('../../src/shared/config/load.js'), import('../../src/supervisor/index.js')]);

/** The real supervisor and its worker threads, in this process, on a free loopback port. */
export async function startTestServer(fixture: Fixture, artifacts: ArtifactEntry[], overrides: Record<string, unknown> = {}): Promise<TestServer> {
  const [{ loadConfigFile }, { startServer }] = await inProcessServer();
  const port = await freePort();
  const configPath = await writeConfig(fixture, configDocument(fixture, port, artifacts, overrides));
  const supervisor = await startServer(loadConfigFile(configPath), { actorNodeOptions: ACTOR_NODE_OPTIONS });
  return { url: `http://127.0.0.1:${port}`, port, configPath, supervisor, stop: () => supervisor.stop() };
}

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly url: string;
  output(): string;
  /**
   * Resolves once the output holds `pattern`. A line a thread logs after a change another
   * process can see (a file removed, a metric counted) may reach the pipe after the change is
   * seen, so such a line is waited for, not looked for at once. With `from` (a length of
   * `output()` taken before), only output after it counts.
   */
  logged(pattern: RegExp, from?: number): Promise<void>;
  /** Resolves with the exit code once the process has ended and its output is read to the end. */
  exited: Promise<number | null>;
}

/**
 * `updater serve` as its own process, for signals and kill -9. Resolves once it listens, which it
 * learns from the supervisor's "server started" line: an info line, so a configuration whose
 * log_level hides it is refused here at once rather than waited on until the deadline.
 */
export async function spawnServer(configPath: string, url: string, timeoutMs = 60_000): Promise<ServerProcess> {
  const level = (parse(await readFile(configPath, 'utf8')) as { log_level?: string } | null)?.log_level ?? 'info';
  if (!['trace', 'debug', 'info'].includes(level)) {
    throw new Error(`spawnServer needs log_level info or lower to see "server started"; ${configPath} has ${level}`);
  }
  const node = nodeChild([UPDATER_BIN, 'serve', '--config', configPath]);
  const child = spawn(node.command, node.args, { stdio: ['ignore', 'pipe', 'pipe'], env: node.env });
  let text = '';
  child.stdout!.on('data', (d) => (text += d));
  child.stderr!.on('data', (d) => (text += d));
  // 'close', not 'exit': Node may emit 'exit' before it has read the last of the child's output
  // from the pipes, and the tests read the last lines (the drain's, say) once it has exited.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const started = Date.now();
  while (!text.includes('"server started"')) {
    if (child.exitCode !== null || Date.now() - started > timeoutMs) {
      child.kill('SIGKILL');
      throw new Error(`server did not start:\n${text}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const logged = async (pattern: RegExp, from = 0) => void await eventually(`the server logs ${pattern}`, async () => pattern.test(text.slice(from)), (found) => found);
  return { child, url, output: () => text, logged, exited };
}

/** Runs `updater` with arguments (and `env` added to the environment) and collects its output. */
export function runUpdater(args: string[], timeoutMs = 30_000, env: NodeJS.ProcessEnv = {}): Promise<UpdaterRun> {
  return spawnUpdater(args, timeoutMs, env).done;
}

export interface UpdaterRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** runUpdater with the child at hand, to signal it (`updater load` reports and ends on SIGINT). */
export function spawnUpdater(args: string[], timeoutMs = 30_000, env: NodeJS.ProcessEnv = {}): { child: ChildProcess; stderr: () => string; done: Promise<UpdaterRun> } {
  const node = nodeChild([UPDATER_BIN, ...args], env);
  const child = spawn(node.command, node.args, { stdio: ['ignore', 'pipe', 'pipe'], env: node.env });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const done = new Promise<UpdaterRun>((resolve) => {
    // Once the pipes are read to their end, as spawnServer's `exited`.
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
  return { child, stderr: () => stderr, done };
}
