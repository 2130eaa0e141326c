import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

// The system tools some tests call, which npm cannot bring, each with the Debian package that
// brings it, and how to tell whether this machine has it. Tests use them through needs()
// (system-tools.ts); run-after.ts names the packages of the tests skipped.

export interface SystemTool {
  /** The Debian package that brings it. */
  readonly pkg: string;
  /** What the tests use it for. */
  readonly why: string;
  /** An executable looked up on PATH (and the sbin directories), a fixed file, or a Python module. */
  readonly probe: { readonly command: string; readonly envVar?: string } | { readonly file: string } | { readonly python: string };
}

export const SYSTEM_TOOLS = {
  zstd: { pkg: 'zstd', why: 'the stock zstd reads what the server compresses', probe: { command: 'zstd' } },
  xz: { pkg: 'xz-utils', why: 'the stock xz writes bsdiff-lzma streams the engine did not', probe: { command: 'xz' } },
  bspatch: { pkg: 'bsdiff', why: 'the stock bspatch applies the server\'s deltas', probe: { command: 'bspatch' } },
  bsdiff: { pkg: 'bsdiff', why: 'the stock bsdiff makes a delta the server did not', probe: { command: 'bsdiff' } },
  chromium: { pkg: 'chromium', why: 'the console\'s browser tests', probe: { command: 'chromium', envVar: 'UPDATER_TEST_CHROMIUM' } },
  nginx: { pkg: 'nginx', why: 'the documented proxy and the cluster\'s load balancer', probe: { command: 'nginx', envVar: 'UPDATER_TEST_NGINX' } },
  'nginx-stream': { pkg: 'libnginx-mod-stream', why: 'deploy/nginx-cluster.conf loads the stream module', probe: { file: '/usr/lib/nginx/modules/ngx_stream_module.so' } },
  promtool: { pkg: 'prometheus', why: 'Prometheus\' linter reads /metrics', probe: { command: 'promtool' } },
  'systemd-analyze': { pkg: 'systemd', why: 'systemd checks the units in deploy/', probe: { command: 'systemd-analyze' } },
  openssl: { pkg: 'openssl', why: 'test CAs, and keys read by another implementation', probe: { command: 'openssl' } },
  wrk: { pkg: 'wrk', why: 'the load benchmarks\' Lua scripts, run by the load generator they were written for', probe: { command: 'wrk' } },
  curl: { pkg: 'curl', why: 'a stock HTTP client against the server', probe: { command: 'curl' } },
  python3: { pkg: 'python3', why: 'a second implementation of cohort bucketing', probe: { command: 'python3' } },
  script: { pkg: 'bsdutils', why: 'runs the server on a pseudo-terminal', probe: { command: 'script' } },
  'python3-cryptography': { pkg: 'python3-cryptography', why: 'Python reads the keys `updater keygen` writes', probe: { python: 'cryptography' } },
} as const satisfies Record<string, SystemTool>;

export type ToolName = keyof typeof SYSTEM_TOOLS;

// Debian puts nginx in /usr/sbin, which is not on a non-root user's PATH.
const SBIN = ['/usr/local/sbin', '/usr/sbin', '/sbin'];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The full path of an executable on PATH or in the sbin directories, or undefined. */
export function findCommand(command: string, env: NodeJS.ProcessEnv = process.env, extraDirs: readonly string[] = SBIN): string | undefined {
  const dirs = [...(env.PATH ?? '').split(delimiter).filter((d) => d !== ''), ...extraDirs];
  return dirs.map((d) => join(d, command)).find(executable);
}

/**
 * Where a command tool is: its variable (UPDATER_TEST_CHROMIUM, UPDATER_TEST_NGINX) when set,
 * else found on PATH or in the sbin directories; undefined when it is not there.
 */
export function toolPath(name: ToolName, env: NodeJS.ProcessEnv = process.env, extraDirs: readonly string[] = SBIN): string | undefined {
  const probe: SystemTool['probe'] = SYSTEM_TOOLS[name].probe;
  if (!('command' in probe)) throw new TypeError(`${name} is not a command`);
  const chosen = probe.envVar === undefined ? undefined : env[probe.envVar];
  if (chosen) return executable(chosen) ? chosen : undefined;
  return findCommand(probe.command, env, extraDirs);
}

/** Whether the tool is on this machine. */
export function hasTool(name: ToolName, env: NodeJS.ProcessEnv = process.env, extraDirs: readonly string[] = SBIN): boolean {
  const probe: SystemTool['probe'] = SYSTEM_TOOLS[name].probe;
  if ('command' in probe) return toolPath(name, env, extraDirs) !== undefined;
  if ('file' in probe) {
    try {
      return statSync(probe.file).isFile();
    } catch {
      return false;
    }
  }
  const python = findCommand('python3', env, extraDirs);
  return python !== undefined && spawnSync(python, ['-c', `import ${probe.python}`], { stdio: 'ignore', env }).status === 0;
}

/** `apt-get install …` for the tools, each package once. */
export function aptLine(names: readonly ToolName[]): string {
  return `apt-get install ${[...new Set(names.map((n) => SYSTEM_TOOLS[n].pkg))].sort().join(' ')}`;
}
