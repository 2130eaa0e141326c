import type { Test } from 'tap';
import { spawn } from 'node:child_process';
import { mkdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { FAULT_ENV } from '../../agent/fault.js';
import { sha256Hex, type Fixture } from './fixture.js';
import { UPDATER_BIN } from './server.js';

// A provisioned device for end-to-end tests: a real slot directory (binary as slot-a,
// `current` -> slot-a) and an agent configuration pointing at a server on loopback.

export interface Device {
  readonly slotDir: string;
  readonly configPath: string;
  /** The slot `current` names and the hash of the file it names. */
  current(): Promise<{ slot: string; hash: string }>;
  /** `updater agent --config X --once` as a child process. */
  runOnce(faultStep?: string): Promise<AgentRun>;
  readState(): Promise<any>;
}

export interface AgentRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  lines: any[];
}

let deviceCount = 0;

export async function makeDevice(fixture: Fixture, httpUrl: string, binary: Buffer, overrides: Record<string, unknown> = {}): Promise<Device> {
  const name = `device-${++deviceCount}`;
  const slotDir = join(fixture.dir, name);
  await mkdir(slotDir);
  await writeFile(join(slotDir, 'slot-a'), binary, { mode: 0o755 });
  await symlink('slot-a', join(slotDir, 'current'));
  const configPath = join(fixture.dir, `${name}.yaml`);
  await writeFile(configPath, stringify({
    device_id: name,
    artifact: 'app',
    public_key: fixture.publicKey,
    http_url: httpUrl,
    primary: 'http',
    slot_dir: slotDir,
    interval: '5m',
    restart_command: 'true',
    log_level: 'info',
    health_check_delay: '10ms',
    retry_base: '10ms',
    retry_max: '100ms',
    request_timeout: '10s',
    checkpoint_kb: 64,
    ...overrides,
  }));
  return {
    slotDir,
    configPath,
    async current() {
      const slot = await readlink(join(slotDir, 'current'));
      return { slot, hash: sha256Hex(await readFile(join(slotDir, slot))) };
    },
    runOnce: (faultStep) => runAgentOnce(configPath, faultStep),
    async readState() {
      return JSON.parse(await readFile(join(slotDir, '.agent-state.json'), 'utf8'));
    },
  };
}

export function runAgentOnce(configPath: string, faultStep?: string, timeoutMs = 60_000): Promise<AgentRun> {
  return new Promise((resolve) => {
    const env = { ...process.env };
    delete env[FAULT_ENV];
    if (faultStep) env[FAULT_ENV] = faultStep;
    const child = spawn(process.execPath, [UPDATER_BIN, 'agent', '--config', configPath, '--once'], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const lines = output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
      resolve({ code, signal, output, lines });
    });
  });
}

/** True when some log line has this message. */
export function logged(run: AgentRun, msg: string): boolean {
  return run.lines.some((l) => l.msg === msg);
}

/** Asserts a clean exit; the agent's log is shown only when it was not. */
export function expectExit(t: Test, run: AgentRun, code = 0, what = `the agent exits ${code}`): void {
  if (!t.equal(run.code, code, what)) t.comment(run.output);
}
