import type { Test } from 'tap';
import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { FAULT_ENV } from '../../agent/fault.js';
import { firmware, freePort, makeFixture, nextVersion, sha256Hex, type Fixture } from './fixture.js';
import { heartbeatUntilSigned } from './http.js';
import { UPDATER_BIN, startTestServer, type TestServer } from './server.js';
import { nodeChild } from './node-options.js';
import { authHttp, TestDevice, tokenHttp } from './device-auth.js';
import { adminCall } from './admin.js';

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
    const node = nodeChild([UPDATER_BIN, 'agent', '--config', configPath, '--once']);
    delete node.env[FAULT_ENV];
    if (faultStep) node.env[FAULT_ENV] = faultStep;
    const child = spawn(node.command, node.args, { stdio: ['ignore', 'pipe', 'pipe'], env: node.env });
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

export interface UpdateWorld {
  fixture: Fixture;
  server: TestServer;
  v1Bytes: Buffer;
  v2Bytes: Buffer;
  v1Hash: string;
  v2Hash: string;
  /** A binary the server never saw: such a device gets full mode. */
  strangerBytes: Buffer;
}

/**
 * A real server whose track `app` ships v2 while a second track ships v1 (so it holds v1
 * and can make the v1 -> v2 delta), with full downloads allowed; both transfers are ready.
 */
export async function startUpdateWorld(t: Test, size = 1_500_000, options: { coap?: boolean; devices?: Record<string, unknown> } = {}): Promise<UpdateWorld & { coapUrl?: string }> {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1Bytes = firmware(size, 'w1');
  const v2Bytes = nextVersion(v1Bytes, 'w2');
  const v1 = await fixture.writeBinary('v1.bin', v1Bytes);
  const v2 = await fixture.writeBinary('v2.bin', v2Bytes);
  const coapPort = options.coap ? await freePort() : undefined;
  const server = await startTestServer(fixture, [
    { name: 'app', version: '2.0.0', binary: v2.path },
    { name: 'legacy', version: '1.0.0', binary: v1.path },
  ], {
    default_artifact: 'app', allow_full_download: true,
    ...(coapPort ? { listen: { coap: `127.0.0.1:${coapPort}` } } : {}),
    ...(options.devices ? { devices: options.devices } : {}),
  });
  t.teardown(() => server.stop());
  const strangerBytes = firmware(200_000, 'stranger');
  // With devices.auth on, the warm-up heartbeats are an enrolled device's too.
  const token = options.devices ? await warmUpToken(server.url) : undefined;
  await heartbeatUntilSigned(server.url, v1.hash, 'app', 60_000, token);
  // The agent asks for bsdiff-lzma by default: that delta is made ready too.
  await heartbeatUntilSigned(server.url, v1.hash, 'app', 60_000, token, ['bsdiff-lzma']);
  await heartbeatUntilSigned(server.url, sha256Hex(strangerBytes), 'app', 60_000, token);
  return { fixture, server, v1Bytes, v2Bytes, v1Hash: v1.hash, v2Hash: v2.hash, strangerBytes, ...(coapPort ? { coapUrl: `coap://127.0.0.1:${coapPort}` } : {}) };
}

/** A token for the warm-up heartbeats' device (helpers/http.ts): accepted by the operator when enrollment is manual. */
async function warmUpToken(url: string): Promise<string> {
  const device = new TestDevice('device-0001');
  if ((await authHttp(url, device.request())).status === 202) await adminCall(url, 'POST', '/admin/devices/device-0001/accept');
  return tokenHttp(url, device);
}

/** Runs clean `--once` cycles (each must exit 0) until the device runs `hash` with its update confirmed. */
export async function runUntilRunning(t: Test, device: Device, hash: string, what: string, cycles = 6): Promise<void> {
  for (let cycle = 1; cycle <= cycles; cycle++) {
    expectExit(t, await device.runOnce(), 0, `${what}: cycle ${cycle} exits 0`);
    if ((await device.current()).hash === hash && !(await readdir(device.slotDir)).includes('.pending_update')) return;
  }
  t.fail(`${what}: the device did not reach ${hash}`);
}
